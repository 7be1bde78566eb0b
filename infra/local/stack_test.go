package main

import (
	"bufio"
	"context"
	"errors"
	"io"
	"os"
	"strings"
	"sync"
	"testing"
	"time"
)

// localStack is `make run` started by a test: run itself, on a free port,
// its banner and demo read from its output.
type localStack struct {
	base   string // the API's URL, as the banner prints it
	secret []byte
	mu     sync.Mutex
	out    strings.Builder // everything it printed
	// stop ends it as Ctrl-C does and returns what run returned.
	stop func() error
}

// Output is what the stack printed so far.
func (s *localStack) Output() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.out.String()
}

// startLocal runs the local stack as `make run` does (run, PORT=0, the
// rest of the environment from env), waits until it serves and its demo
// has finished, and stops it when the test ends.
func startLocal(t *testing.T, env map[string]string) *localStack {
	t.Helper()
	getenv := func(k string) string {
		if v, ok := env[k]; ok {
			return v
		}
		if k == "PORT" {
			return "0"
		}
		return ""
	}
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, nil, getenv, w)
		_ = w.Close()
	}()
	s := &localStack{secret: []byte(DefaultJWTSecret)}
	if v := env["LOCAL_JWT_SECRET"]; v != "" {
		s.secret = []byte(v)
	}
	serving := make(chan struct{})
	scanned := make(chan struct{})
	go func() {
		defer close(scanned)
		sc := bufio.NewScanner(r)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		once := sync.Once{}
		for sc.Scan() {
			line := sc.Text()
			s.mu.Lock()
			s.out.WriteString(line + "\n")
			if url, ok := strings.CutPrefix(strings.TrimSpace(line), "API:"); ok && s.base == "" {
				s.base = strings.TrimSpace(url)
			}
			s.mu.Unlock()
			if strings.HasPrefix(line, "Serving;") {
				once.Do(func() { close(serving) })
			}
		}
		_, _ = io.Copy(io.Discard, r)
	}()
	var once sync.Once
	var stopErr error
	s.stop = func() error {
		once.Do(func() {
			cancel()
			select {
			case stopErr = <-done:
			case <-time.After(30 * time.Second):
				stopErr = errors.New("the local stack did not stop")
			}
			<-scanned
		})
		return stopErr
	}
	t.Cleanup(func() {
		if err := s.stop(); err != nil {
			t.Errorf("the local stack stopped with %v", err)
		}
	})
	select {
	case <-serving:
	case err := <-done:
		t.Fatalf("the local stack stopped: %v\n%s", err, s.Output())
	case <-time.After(2 * time.Minute):
		t.Fatalf("the local stack never served:\n%s", s.Output())
	}
	if s.base == "" {
		t.Fatalf("no API line in:\n%s", s.Output())
	}
	return s
}
