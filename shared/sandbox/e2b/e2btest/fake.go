// Package e2btest is a fake E2B that follows the public spec (see
// ../shared/reference/e2b-api.md, section 7): the control-plane API and the
// code interpreter's /execute, served by one handler. It runs no code: an
// execution plays what the test's OnExecute writes. Tests drive the real
// e2b client against it, including the failures real E2B shows (sandboxes
// vanishing, streams cut, capacity refusals, client disconnects).
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

// DefaultAPIKey is the key a fake accepts unless told otherwise.
const DefaultAPIKey = "e2b_fake_key_0123456789"

// ExecuteFunc plays one execution: whatever it writes to w is streamed,
// then end_of_execution, unless w was told to end otherwise.
type ExecuteFunc func(sandboxID, language, code string, w *StreamWriter)

// Fake is a fake E2B. Configure it with its methods, which are safe to
// call while requests are served.
type Fake struct {
	// URL serves both the API and the sandbox host (addressed by the
	// E2b-Sandbox-Id header or a {port}-{id}. host prefix).
	URL string

	srv  *httptest.Server
	mux  *http.ServeMux
	stop chan struct{}

	mu             sync.Mutex
	apiKey         string
	domain         string
	now            func() time.Time
	keepaliveEvery time.Duration
	onExecute      ExecuteFunc
	createFaults   []fault

	seq        int
	sandboxes  map[string]*fakeSandbox
	creates    []CreateCall
	executions []ExecuteCall
	interrupts []string
	kills      []string
}

type fault struct {
	status    int
	errorCode string
}

// New returns a fake that is not listening; serve it with its Handler or
// use Start.
func New() *Fake {
	f := &Fake{
		stop:           make(chan struct{}),
		apiKey:         DefaultAPIKey,
		domain:         "e2b.test",
		now:            time.Now,
		keepaliveEvery: 5 * time.Second,
		sandboxes:      map[string]*fakeSandbox{},
	}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /sandboxes", f.create)
	mux.HandleFunc("GET /v2/sandboxes", f.list)
	mux.HandleFunc("GET /sandboxes/{id}", f.get)
	mux.HandleFunc("DELETE /sandboxes/{id}", f.kill)
	mux.HandleFunc("POST /sandboxes/{id}/timeout", f.setTimeout)
	f.mux = mux
	return f
}

// Start serves a new fake on a local port until the test ends.
func Start(tb testing.TB) *Fake {
	tb.Helper()
	f := New()
	f.srv = httptest.NewServer(f)
	f.URL = f.srv.URL
	if u, err := url.Parse(f.URL); err == nil {
		f.domain = u.Host
	}
	tb.Cleanup(f.Close)
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
	if f.srv != nil {
		f.srv.CloseClientConnections()
		f.srv.Close()
	}
}

// ClientConfig is an e2b.Config that talks to this fake.
func (f *Fake) ClientConfig() e2b.Config {
	c := e2b.Config{APIKey: f.APIKey(), APIURL: f.URL, SandboxURL: f.URL, RetryBackoff: time.Millisecond}
	if f.srv != nil {
		c.HTTPClient = f.srv.Client()
	}
	return c
}

// ServeHTTP routes sandbox-host requests (/execute, /health) apart from
// API requests.
func (f *Fake) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if id, ok := sandboxTarget(r); ok {
		f.sandboxHost(w, r, id)
		return
	}
	f.mux.ServeHTTP(w, r)
}

// APIKey is the key the API accepts.
func (f *Fake) APIKey() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.apiKey
}

// SetAPIKey changes the key the API accepts.
func (f *Fake) SetAPIKey(k string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.apiKey = k
}

// SetClock replaces the clock that drives creation times and expiry.
func (f *Fake) SetClock(now func() time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.now = now
}

// SetKeepalive sets the silence after which a stream sends a keepalive
// (5 s in E2B).
func (f *Fake) SetKeepalive(d time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.keepaliveEvery = d
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

// CreateCall is one create request as received.
type CreateCall struct {
	// Body is the JSON body as sent (nil when it was not JSON).
	Body map[string]any
	// Status is the answer's status; SandboxID is set on 201.
	Status    int
	SandboxID string
}

// ExecuteCall is one /execute request as received.
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

// Executions returns every /execute request so far.
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

// Info is what the fake knows of a sandbox.
type Info struct {
	ID        string
	State     string
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
	return Info{
		ID: s.id, State: s.state, StartedAt: s.startedAt, EndAt: s.endAt,
		Metadata: maps.Clone(s.metadata), EnvVars: maps.Clone(s.envVars),
		AllowInternetAccess: s.allowInternet, Executions: s.executions,
	}, true
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
