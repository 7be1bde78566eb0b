// Package e2btest is a fake E2B for the tests of the e2b client and of
// what uses it (the code tool, the reaper). It follows the public spec
// (../shared/reference/e2b-api.md beside the checkout) for what they use,
// and only that: create, kill, set timeout, the v2 list (metadata filter,
// state, order, X-Next-Token paging) and the code interpreter's /execute
// stream through the sandbox proxy (E2b-Sandbox-Id). It runs no code: an
// execution plays what the test's OnExecute writes. The failures real E2B
// shows can be injected: capacity refusals, sandboxes vanishing, streams
// cut, clients going away (which interrupts the kernel).
package e2btest

import (
	"crypto/rand"
	"encoding/hex"
	"maps"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/commonly/runtime/shared/sandbox/e2b"
)

// DefaultAPIKey is the key a fake accepts.
const DefaultAPIKey = "e2b_fake_key_0123456789"

// DefaultStage is the stage of ClientConfig's clients (e2b.MetaStage).
const DefaultStage = "test"

// ExecuteFunc plays one execution: whatever it writes to w is streamed,
// then end_of_execution, unless w was told to end otherwise.
type ExecuteFunc func(sandboxID, language, code string, w *StreamWriter)

// Fake is a fake E2B. Configure it with its methods, which are safe to
// call while requests are served.
type Fake struct {
	// URL serves both the API and the sandbox proxy.
	URL string

	srv  *httptest.Server
	mux  *http.ServeMux
	stop chan struct{}

	mu           sync.Mutex
	domain       string
	now          func() time.Time
	onExecute    ExecuteFunc
	createFaults []fault

	seq        int
	sandboxes  map[string]*fakeSandbox
	creates    []CreateCall
	executions []ExecuteCall
	interrupts []string
	kills      []string

	// Faults and hooks of the list and kill calls (faults.go).
	calls      map[string]int
	listFaults []listFault
	killFaults map[string]int
	beforeList func(n int)
	beforeKill func(id string)
}

type fault struct {
	status    int
	errorCode string
}

// Start serves a new fake on a local port until the test ends.
func Start(tb testing.TB) *Fake {
	tb.Helper()
	f := Serve()
	tb.Cleanup(f.Close)
	return f
}

// Serve serves a new fake on a local port until Close, for a program
// that is not a test (the load run, bench/load).
func Serve() *Fake {
	f := &Fake{stop: make(chan struct{}), now: time.Now, sandboxes: map[string]*fakeSandbox{}, calls: map[string]int{}, killFaults: map[string]int{}}
	f.mux = http.NewServeMux()
	f.mux.HandleFunc("POST /sandboxes", f.create)
	f.mux.HandleFunc("GET /v2/sandboxes", f.list)
	f.mux.HandleFunc("DELETE /sandboxes/{id}", f.kill)
	f.mux.HandleFunc("POST /sandboxes/{id}/timeout", f.setTimeout)
	f.srv = httptest.NewServer(f)
	f.URL = f.srv.URL
	if u, err := url.Parse(f.URL); err == nil {
		f.domain = u.Host
	}
	return f
}

// Close stops streams in progress and the server.
func (f *Fake) Close() {
	f.mu.Lock()
	select {
	case <-f.stop:
	default:
		close(f.stop)
	}
	f.mu.Unlock()
	f.srv.CloseClientConnections()
	f.srv.Close()
}

// ClientConfig is an e2b.Config that talks to this fake.
func (f *Fake) ClientConfig() e2b.Config {
	return e2b.Config{APIKey: DefaultAPIKey, Stage: DefaultStage, APIURL: f.URL, SandboxURL: f.URL, RetryBackoff: time.Millisecond, HTTPClient: f.srv.Client()}
}

// ServeHTTP routes requests for a sandbox's port (E2b-Sandbox-Id) apart
// from API requests.
func (f *Fake) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if id := r.Header.Get("E2b-Sandbox-Id"); id != "" {
		f.sandboxHost(w, r, id)
		return
	}
	if _, pattern := f.mux.Handler(r); pattern != "" {
		f.mu.Lock()
		f.calls[pattern]++
		f.mu.Unlock()
	}
	f.mux.ServeHTTP(w, r)
}

// SetClock replaces the clock that drives creation times and expiry.
func (f *Fake) SetClock(now func() time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.now = now
}

// OnExecute sets what executions play; nil plays an empty execution.
func (f *Fake) OnExecute(fn ExecuteFunc) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.onExecute = fn
}

// FailCreates makes the next n creates fail with status and error_code
// (e.g. 503 sandbox_capacity_unavailable).
func (f *Fake) FailCreates(n, status int, errorCode string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for range n {
		f.createFaults = append(f.createFaults, fault{status, errorCode})
	}
}

// Vanish removes a sandbox without a kill, as when E2B loses one before
// its time: later calls get 404 and executes 502.
func (f *Fake) Vanish(id string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.remove(id)
}

// Extend sets a live sandbox to end d from the fake's now, as a client
// that extends its timeout (by mistake) does; false when it is gone.
func (f *Fake) Extend(id string, d time.Duration) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.sweep()
	s, ok := f.sandboxes[id]
	if ok {
		s.endAt = f.now().Add(d)
	}
	return ok
}

// CreateCall is one create request as received.
type CreateCall struct {
	// Body is the JSON body as sent (nil when it was not JSON).
	Body map[string]any
	// Status is the answer's status; SandboxID is set on 201.
	Status    int
	SandboxID string
}

// ExecuteCall is one /execute request that reached the interpreter.
type ExecuteCall struct {
	SandboxID string
	Language  string
	Code      string
	Body      map[string]any
	Header    http.Header
	Status    int
}

// Creates returns every create request so far.
func (f *Fake) Creates() []CreateCall {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]CreateCall(nil), f.creates...)
}

// Executions returns every /execute request that reached the interpreter.
func (f *Fake) Executions() []ExecuteCall {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]ExecuteCall(nil), f.executions...)
}

// Interrupts returns the sandboxes whose kernel was interrupted because a
// client went away mid-execution, in order.
func (f *Fake) Interrupts() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.interrupts...)
}

// Kills returns the sandboxes killed through the API (204 answers).
func (f *Fake) Kills() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.kills...)
}

// Info is what the fake knows of a live sandbox.
type Info struct {
	ID        string
	State     string // always running: a sandbox past its end is gone
	StartedAt time.Time
	EndAt     time.Time
	Metadata  map[string]string
	EnvVars   map[string]string
	// AllowInternetAccess is nil when the create did not say.
	AllowInternetAccess *bool
	Executions          int
}

// Sandbox describes a live sandbox (after expiry at the current clock).
func (f *Fake) Sandbox(id string) (Info, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.sweep()
	s, ok := f.sandboxes[id]
	if !ok {
		return Info{}, false
	}
	return s.info(), true
}

// Sandboxes lists the live sandboxes (after expiry at the current
// clock), in no order.
func (f *Fake) Sandboxes() []Info {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.sweep()
	out := make([]Info, 0, len(f.sandboxes))
	for _, s := range f.sandboxes {
		out = append(out, s.info())
	}
	return out
}

// info describes the sandbox; the caller holds the fake's lock.
func (s *fakeSandbox) info() Info {
	return Info{
		ID: s.id, State: stateRunning, StartedAt: s.startedAt, EndAt: s.endAt,
		Metadata: maps.Clone(s.metadata), EnvVars: maps.Clone(s.envVars),
		AllowInternetAccess: s.allowInternet, Executions: s.executions,
	}
}

// Alive counts live sandboxes (after expiry at the current clock).
func (f *Fake) Alive() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.sweep()
	return len(f.sandboxes)
}

func randomToken() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b) // never fails (crypto/rand panics instead)
	return hex.EncodeToString(b)
}

// Clock is a manual clock for SetClock.
type Clock struct {
	mu sync.Mutex
	t  time.Time
}

// NewClock starts a clock at t.
func NewClock(t time.Time) *Clock { return &Clock{t: t} }

// Now reads the clock.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

// Advance moves the clock forward.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}
