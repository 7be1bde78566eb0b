package loopback

import (
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// A connection a client dialled and never used (the SDK's transport
// dials spares) holds http.Server.Shutdown for 5 s; the server closes it
// instead, so Shutdown returns once the requests in flight have, inside a
// deadline shorter than those 5 s.
func TestShutdownClosesConnectionsNeverUsed(t *testing.T) {
	s, err := Serve("127.0.0.1:0", http.NotFoundHandler())
	if err != nil {
		t.Fatal(err)
	}
	u := &s.unused
	c, err := net.Dial("tcp", strings.TrimPrefix(s.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
		u.mu.Lock()
		n := len(u.conns)
		u.mu.Unlock()
		if n == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the server never accepted the connection")
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	if err := s.srv.Shutdown(ctx); err != nil {
		t.Fatalf("Shutdown: %v, want it to close the unused connection and return", err)
	}
	if _, err := c.Read(make([]byte, 1)); err != io.EOF {
		t.Errorf("the unused connection read %v, want EOF (closed by the server)", err)
	}
}

// A request in flight is let finish: Close waits for its answer.
func TestCloseLetsARequestInFlightFinish(t *testing.T) {
	started, release := make(chan struct{}), make(chan struct{})
	s, err := Serve("127.0.0.1:0", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		close(started)
		<-release
		_, _ = io.WriteString(w, "done")
	}))
	if err != nil {
		t.Fatal(err)
	}
	answer := make(chan string, 1)
	go func() {
		resp, err := http.Get(s.URL)
		if err != nil {
			answer <- err.Error()
			return
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		answer <- string(b)
	}()
	<-started
	closed := make(chan error, 1)
	go func() { closed <- s.Close() }()
	close(release)
	if got := <-answer; got != "done" {
		t.Errorf("the request in flight got %q, want its answer", got)
	}
	if err := <-closed; err != nil {
		t.Errorf("Close: %v", err)
	}
}
