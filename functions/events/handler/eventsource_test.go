package handler_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestEventSourceThroughARunACutAndTheEnd drives the route with a
// W3C-conformant client, the npm eventsource package (5.x, built with
// the example client by `make api`), its fetch sending the bearer token:
// through a running run, a connection cut after the third event (it
// reconnects with Last-Event-ID), and the end (run.finished, then its
// reconnect is answered 204 and it stops). Every event arrives once, in
// order, and no request comes after the 204. eventsource 5 needs Node
// 22.12 or later: EVENTSOURCE_NODE names one (`make test` passes the CDK
// CLI's pinned Node), else the node on the PATH if it is recent enough.
func TestEventSourceThroughARunACutAndTheEnd(t *testing.T) {
	script, _ := filepath.Abs(filepath.Join("..", "..", "..", "api", "client-example", "dist", "eventsource-watch.js"))
	if _, err := os.Stat(script); err != nil {
		t.Skip("`make api` builds api/client-example/dist (make test runs it first)")
	}
	node := nodeForEventSource(t)
	var counted *requests
	r := newRig(t, rigOpts{heartbeat: time.Hour, wrap: func(h http.Handler) http.Handler {
		counted = &requests{h: h, cutAfter: 3}
		return counted
	}})
	run, log := r.running(t, "run-es")

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, script, r.srv.URL+"/v1/runs/run-es/events", "user-1")
	cmd.Dir = filepath.Dir(filepath.Dir(script))
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()

	type line struct {
		ID    string         `json:"id"`
		Type  string         `json:"type"`
		Data  map[string]any `json:"data"`
		Error *int           `json:"error"`
	}
	var got []line
	finished := false
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		text := sc.Text()
		if text == "closed" {
			break
		}
		var l line
		if err := json.Unmarshal([]byte(text), &l); err != nil {
			t.Fatalf("%q: %v", text, err)
		}
		if l.Type == "" {
			continue // an error line: the cut, then the 204
		}
		got = append(got, l)
		// The run goes on after the cut: once the client has the events
		// the worker wrote before, the rest, then the end.
		if l.ID == strconv.FormatInt(log.LastID(), 10) && !finished {
			finished = true
			r.finish(t, run, log)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	// It lingers 3 s after giving up: a reconnect would show here.
	waitErr := cmd.Wait()
	if waitErr != nil && !errors.Is(ctx.Err(), context.DeadlineExceeded) {
		t.Logf("node: %v\n%s", waitErr, stderr.String())
	}

	// Every event once, in order, run.finished last.
	total := int(log.LastID()) + 1
	if len(got) != total || got[len(got)-1].Type != "run.finished" {
		t.Fatalf("%d events: %+v\n%s", len(got), got, stderr.String())
	}
	for i, l := range got {
		if l.ID != strconv.Itoa(i+1) || l.Data["id"] != float64(i+1) || l.Data["type"] != l.Type {
			t.Fatalf("event %d: %+v", i, l)
		}
	}
	// Three requests: the first, cut after three events; the resume from
	// the third; the reconnect after run.finished, answered 204. No more.
	reqs := counted.seen()
	want := []string{"200 after ", "200 after 3", "204 after " + strconv.Itoa(total)}
	if !slices.Equal(reqs, want) {
		t.Errorf("requests %q, want %q", reqs, want)
	}
}

// nodeForEventSource is a node that runs eventsource 5 (Node ≥ 22.12).
func nodeForEventSource(t *testing.T) string {
	t.Helper()
	node := os.Getenv("EVENTSOURCE_NODE")
	if node == "" {
		var err error
		if node, err = exec.LookPath("node"); err != nil {
			t.Skip("no node")
		}
	}
	out, err := exec.Command(node, "--version").Output()
	if err != nil {
		t.Fatalf("%s --version: %v", node, err)
	}
	m := regexp.MustCompile(`^v(\d+)\.(\d+)`).FindStringSubmatch(string(out))
	major, _ := strconv.Atoi(m[1])
	minor, _ := strconv.Atoi(m[2])
	if major < 22 || (major == 22 && minor < 12) {
		t.Skipf("eventsource 5 needs Node 22.12 or later, %s is %s (make test sets EVENTSOURCE_NODE)", node, strings.TrimSpace(string(out)))
	}
	return node
}

// requests serves the route, counting each request with its answer, and
// cuts the first stream after cutAfter events, as a dropped connection.
type requests struct {
	h        http.Handler
	cutAfter int
	mu       sync.Mutex
	log      []string
}

func (q *requests) seen() []string {
	q.mu.Lock()
	defer q.mu.Unlock()
	return slices.Clone(q.log)
}

func (q *requests) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	q.mu.Lock()
	first := len(q.log) == 0
	i := len(q.log)
	q.log = append(q.log, "after "+r.Header.Get("Last-Event-ID"))
	q.mu.Unlock()
	sw := &statusWriter{ResponseWriter: w, left: -1}
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	if first {
		sw.left, sw.cancel = q.cutAfter, cancel
	}
	q.h.ServeHTTP(sw, r.WithContext(ctx))
	q.mu.Lock()
	q.log[i] = strconv.Itoa(sw.status) + " " + q.log[i]
	q.mu.Unlock()
	if sw.cut {
		panic(http.ErrAbortHandler) // the connection drops
	}
}

// statusWriter notes the status and, with left ≥ 0, stops the stream
// after left events.
type statusWriter struct {
	http.ResponseWriter
	status int
	left   int
	cut    bool
	cancel func()
}

func (w *statusWriter) WriteHeader(code int) {
	w.status = code
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	if w.left == 0 {
		w.cut = true
		w.cancel()
		return 0, errors.New("cut")
	}
	if w.left > 0 && strings.HasPrefix(string(b), "id: ") {
		w.left--
	}
	n, err := w.ResponseWriter.Write(b)
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
	return n, err
}
