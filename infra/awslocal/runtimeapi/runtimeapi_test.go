package runtimeapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/commonly/runtime/infra/awslocal/runtimeapi"
)

// bootstrap is testdata/fn built as the Makefile builds a function's
// bootstrap, once for the package's tests.
var bootstrap string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "runtimeapi-fn-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	bootstrap = filepath.Join(dir, "bootstrap")
	build := exec.Command("go", "build", "-tags", "lambda.norpc", "-trimpath", "-o", bootstrap, "./testdata/fn")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "build the test function: %v\n%s", err, out)
		os.Exit(1)
	}
	code := m.Run()
	_ = os.RemoveAll(dir)
	os.Exit(code)
}

// start serves an environment and runs the test function in it.
func start(t *testing.T, cfg runtimeapi.Config, env ...string) (*runtimeapi.Server, *runtimeapi.Runtime) {
	t.Helper()
	s, err := runtimeapi.Start(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s, run(t, s, env...)
}

func run(t *testing.T, s *runtimeapi.Server, env ...string) *runtimeapi.Runtime {
	t.Helper()
	rt, err := s.StartRuntime(bootstrap, append([]string{"PATH=/usr/bin:/bin", "HOME=" + t.TempDir()}, env...), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = rt.Close()
		if t.Failed() {
			t.Logf("runtime output:\n%s", rt.Output())
		}
	})
	return rt
}

func payload(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func wait(t *testing.T, c *runtimeapi.Call) *runtimeapi.Outcome {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	o, err := c.Wait(ctx)
	if err != nil {
		t.Fatalf("invocation %s: %v", c.RequestID, err)
	}
	return o
}

// A buffered response: the invocation's request id, deadline, ARN and
// trace header reached the handler, and the post is recorded with its
// headers, as aws-lambda-go sends every response (chunked, the error
// trailers declared).
func TestBufferedResponse(t *testing.T) {
	s, _ := start(t, runtimeapi.Config{FunctionName: "fn", Timeout: time.Minute})
	const trace = "Root=1-65f0a2b1-0123456789abcdef01234567;Parent=0123456789abcdef;Sampled=1"
	c := s.Invoke(runtimeapi.Invocation{Payload: payload(t, map[string]string{"do": "echo"}), TraceID: trace})
	o := wait(t, c)
	var got map[string]any
	if o.Kind != runtimeapi.KindResponse || json.Unmarshal(o.Body, &got) != nil {
		t.Fatalf("%+v %s", o, o.Body)
	}
	if got["requestId"] != c.RequestID || got["arn"] != s.FunctionARN() || got["trace"] != trace || got["function"] != "fn" ||
		int64(got["deadlineMs"].(float64)) != c.Deadline().UnixMilli() {
		t.Errorf("the handler saw %v", got)
	}
	if d := time.Until(c.Deadline()); d < 50*time.Second || d > time.Minute {
		t.Errorf("deadline in %s, want the function's minute", d)
	}
	if !slices.Equal(o.TransferEncoding, []string{"chunked"}) || !slices.Equal(o.DeclaredTrailers, []string{runtimeapi.HeaderErrorBody, runtimeapi.HeaderErrorType}) {
		t.Errorf("post: %v, trailers %v", o.TransferEncoding, o.DeclaredTrailers)
	}
	if o.Ended.Before(o.Started) || o.Started.IsZero() {
		t.Errorf("started %s, ended %s", o.Started, o.Ended)
	}
	// One after the other in the same environment.
	for range 3 {
		if o := wait(t, s.Invoke(runtimeapi.Invocation{Payload: payload(t, map[string]string{"do": "echo"})})); o.Kind != runtimeapi.KindResponse {
			t.Fatalf("%+v", o)
		}
	}
}

// gate answers the streaming function's request for part i only once
// part i-1 was recorded: had the response been buffered, the function
// could not go on, so the order proves each part left as it was written.
type gate struct {
	t    *testing.T
	mu   sync.Mutex
	call *runtimeapi.Call
	// late are the parts whose predecessor had not arrived when asked.
	late []string
}

func (g *gate) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	i := strings.TrimPrefix(r.URL.Path, "/")
	var n int
	_, _ = fmt.Sscan(i, &n)
	want := fmt.Sprintf("part %d\n", n-1)
	g.mu.Lock()
	c := g.call
	g.mu.Unlock()
	ctx, cancel := context.WithTimeout(r.Context(), 10*time.Second)
	defer cancel()
	for ch, err := range c.Chunks(ctx) {
		if err != nil {
			break
		}
		if string(ch.Data) == want {
			return
		}
	}
	g.mu.Lock()
	g.late = append(g.late, i)
	g.mu.Unlock()
}

// A streamed response is recorded chunk by chunk as it arrives: the
// prelude, its 8 NUL bytes, and each part in a chunk of its own before
// the function writes the next.
func TestStreamedResponseArrivesChunkByChunk(t *testing.T) {
	s, _ := start(t, runtimeapi.Config{})
	g := &gate{t: t}
	gs := httptest.NewServer(g)
	defer gs.Close()
	g.mu.Lock()
	c := s.Invoke(runtimeapi.Invocation{Payload: payload(t, map[string]any{"do": "stream", "n": 4, "gate": gs.URL})})
	g.call = c
	g.mu.Unlock()
	o := wait(t, c)
	if o.Kind != runtimeapi.KindResponse || o.ErrorType != "" || len(g.late) != 0 {
		t.Fatalf("%+v, late parts %v", o, g.late)
	}
	if ct := o.Header.Get("Content-Type"); ct != "application/vnd.awslambda.http-integration-response" {
		t.Errorf("content type %q", ct)
	}
	prelude, body, ok := bytes.Cut(o.Body, make([]byte, 8))
	if !ok || !json.Valid(prelude) || string(body) != "part 0\npart 1\npart 2\npart 3\n" {
		t.Fatalf("body %q", o.Body)
	}
	var parts []string
	for _, ch := range o.Chunks {
		if bytes.HasPrefix(ch.Data, []byte("part ")) {
			parts = append(parts, string(ch.Data))
		}
	}
	if len(parts) != 4 {
		t.Errorf("parts in chunks of their own: %q", parts)
	}
}

// A stream the function's body reader breaks ends with the error
// trailers aws-lambda-go sends.
func TestStreamBrokenByTheFunction(t *testing.T) {
	s, _ := start(t, runtimeapi.Config{})
	o := wait(t, s.Invoke(runtimeapi.Invocation{Payload: payload(t, map[string]any{"do": "stream-fail", "n": 1})}))
	if o.Kind != runtimeapi.KindResponse || o.ErrorType == "" || o.Trailer.Get(runtimeapi.HeaderErrorBody) == "" || !bytes.HasSuffix(o.Body, []byte("part 0\n")) {
		t.Fatalf("%+v %q", o, o.Body)
	}
}

// A function error is posted to /error; the runtime serves on. A panic
// is posted too, and the runtime exits: the next invocation waits for
// the caller's new runtime.
func TestFunctionErrorAndPanic(t *testing.T) {
	s, rt := start(t, runtimeapi.Config{})
	o := wait(t, s.Invoke(runtimeapi.Invocation{Payload: payload(t, map[string]string{"do": "fail"})}))
	if o.Kind != runtimeapi.KindError || o.ErrorType == "" || !strings.Contains(string(o.Body), "the function failed") {
		t.Fatalf("%+v %s", o, o.Body)
	}
	o = wait(t, s.Invoke(runtimeapi.Invocation{Payload: payload(t, map[string]string{"do": "panic"})}))
	if o.Kind != runtimeapi.KindError || !strings.Contains(string(o.Body), "the function panicked") {
		t.Fatalf("%+v %s", o, o.Body)
	}
	<-rt.Exited()
	next := s.Invoke(runtimeapi.Invocation{Payload: payload(t, map[string]string{"do": "echo"})})
	select {
	case <-next.Started():
		t.Fatal("an invocation started with no runtime")
	case <-time.After(100 * time.Millisecond):
	}
	run(t, s)
	if o := wait(t, next); o.Kind != runtimeapi.KindResponse {
		t.Fatalf("%+v", o)
	}
}

// A runtime killed mid-invocation (SIGKILL, as a crash or Lambda's own
// end) ends the invocation with KindExited; a new runtime takes the next.
func TestRuntimeKilledMidInvocation(t *testing.T) {
	s, rt := start(t, runtimeapi.Config{})
	c := s.Invoke(runtimeapi.Invocation{Payload: payload(t, map[string]any{"do": "sleep", "ms": 20000})})
	<-c.Started()
	if err := rt.Kill(); err != nil {
		t.Fatal(err)
	}
	o := wait(t, c)
	if o.Kind != runtimeapi.KindExited || o.ErrorType != "Runtime.ExitError" || !strings.Contains(o.Err.Error(), "killed") {
		t.Fatalf("%+v", o)
	}
	run(t, s)
	if o := wait(t, s.Invoke(runtimeapi.Invocation{Payload: payload(t, map[string]string{"do": "echo"})})); o.Kind != runtimeapi.KindResponse {
		t.Fatalf("%+v", o)
	}
	// A runtime that exits by itself mid-invocation, the same.
	o = wait(t, s.Invoke(runtimeapi.Invocation{Payload: payload(t, map[string]string{"do": "exit"})}))
	if o.Kind != runtimeapi.KindExited || !strings.Contains(o.Err.Error(), "exit status 3") {
		t.Fatalf("%+v", o)
	}
}

// An invocation past its deadline times out, and Lambda ends the
// environment's runtime.
func TestTimeout(t *testing.T) {
	s, rt := start(t, runtimeapi.Config{Timeout: 300 * time.Millisecond})
	o := wait(t, s.Invoke(runtimeapi.Invocation{Payload: payload(t, map[string]any{"do": "sleep", "ms": 20000})}))
	if o.Kind != runtimeapi.KindTimeout || o.ErrorType != "Sandbox.Timedout" {
		t.Fatalf("%+v", o)
	}
	select {
	case <-rt.Exited():
	case <-time.After(10 * time.Second):
		t.Fatal("the runtime outlived its timed-out invocation")
	}
}

// A runtime that fails its init posts an init error.
func TestInitError(t *testing.T) {
	s, rt := start(t, runtimeapi.Config{}, "FN_INIT_FAIL=1")
	<-rt.Exited()
	if errs := s.InitErrors(); len(errs) != 1 || errs[0].Type != "Runtime.ConfigError" {
		t.Fatalf("%+v", errs)
	}
}

// An internal extension registers and gets INVOKE with each
// invocation's request id; closing the environment ends the runtime.
func TestExtension(t *testing.T) {
	s, err := runtimeapi.Start(runtimeapi.Config{})
	if err != nil {
		t.Fatal(err)
	}
	rt := run(t, s, "FN_EXTENSION=1")
	for range 2 {
		c := s.Invoke(runtimeapi.Invocation{Payload: payload(t, map[string]string{"do": "echo"})})
		o := wait(t, c)
		var got map[string]any
		if o.Kind != runtimeapi.KindResponse || json.Unmarshal(o.Body, &got) != nil || got["extensionSaw"] != c.RequestID {
			t.Fatalf("%+v %s", o, o.Body)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-rt.Exited():
	default:
		t.Error("the runtime outlived its environment")
	}
}

// The API refuses a post for an unknown invocation (400) and a second
// post for one (403), as Lambda's does.
func TestRefusals(t *testing.T) {
	s, err := runtimeapi.Start(runtimeapi.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	base := "http://" + s.Addr + "/2018-06-01/runtime/invocation/"
	post := func(path string) int {
		resp, err := http.Post(base+path, "application/json", strings.NewReader(`{}`))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	reg, _ := http.NewRequest(http.MethodPost, "http://"+s.Addr+"/2020-01-01/extension/register", strings.NewReader(`{"events":["INVOKE","SHUTDOWN"]}`))
	reg.Header.Set("Lambda-Extension-Name", "x")
	if resp, err := http.DefaultClient.Do(reg); err != nil || resp.StatusCode != http.StatusForbidden {
		t.Errorf("an internal extension registering for SHUTDOWN: %v %v", resp, err)
	}
	if code := post("nope/response"); code != http.StatusBadRequest {
		t.Errorf("unknown id: %d", code)
	}
	c := s.Invoke(runtimeapi.Invocation{Payload: []byte(`{}`)})
	resp, err := http.Get(base + "next")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if id := resp.Header.Get(runtimeapi.HeaderRequestID); id != c.RequestID || resp.Header.Get(runtimeapi.HeaderDeadlineMs) == "" {
		t.Fatalf("next: %v", resp.Header)
	}
	if code := post(c.RequestID + "/response"); code != http.StatusAccepted {
		t.Errorf("response: %d", code)
	}
	if code := post(c.RequestID + "/error"); code != http.StatusForbidden {
		t.Errorf("a second answer: %d", code)
	}
	if o := wait(t, c); o.Kind != runtimeapi.KindResponse || string(o.Body) != `{}` {
		t.Errorf("%+v", o)
	}
}
