// Package console is the local stack's console (`make run`, infra/local):
// a page at / that shows the installs and each user's usage today, the
// runs newest first as they change, a run's transcript as it happens and
// its trace as a waterfall, and a form that sends a turn as a chosen
// user; and the API's reference at /docs (Swagger UI) with "try it"
// pointed at the stack. It is local only: nothing of it is deployed.
//
// The page reads runs, events and usage through the public API and the
// typed client (api/client-example), with a token this handler mints for
// it (never typed in). Only what no route lists comes from the stack
// itself: which installs and users exist (a Scan of the state table),
// its spans (TRACES_FILE) and its alarm threshold. Every path it serves
// answers on loopback only, and the page fetches nothing from elsewhere
// (its Content-Security-Policy says so to the browser).
package console

import (
	"context"
	"errors"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/commonly/runtime/shared/money"
)

// Scanner is what the console reads of the state table.
type Scanner interface {
	Scan(ctx context.Context, in *dynamodb.ScanInput, opts ...func(*dynamodb.Options)) (*dynamodb.ScanOutput, error)
}

var _ Scanner = (*dynamodb.Client)(nil)

// Config wires the console to a local stack.
type Config struct {
	// API serves every path the console does not (the local gateway);
	// required.
	API http.Handler
	// Secret signs the page's tokens: the local gateway's HS256 secret;
	// required.
	Secret []byte
	// DB and StateTable are the stack's state table, where the installs
	// and users are listed from; required.
	DB         Scanner
	StateTable string
	// TracesFile is where the stack writes its spans (TRACES_FILE); ""
	// when it writes none. Flush, if set, writes out the spans the stack
	// holds before a trace is read.
	TracesFile string
	Flush      func(context.Context) error
	// Alarm is the spend alarm's threshold a user-day
	// (DAILY_SPEND_ALARM_USD); the cap comes with the usage.
	Alarm money.Micros
	// ClientDir is api/client-example: the typed client the page runs
	// (dist/, built by `make api` or `make console-deps`) and its two
	// packages (node_modules/). WebDir is infra/console/web, where npm
	// puts Swagger UI (node_modules/swagger-ui-dist).
	ClientDir, WebDir string
	// Now is the clock of the tokens; nil is time.Now.
	Now func() time.Time
}

// Console is the console's http.Handler, in front of the API.
type Console struct {
	cfg   Config
	mux   *http.ServeMux
	pages pages
}

// New checks cfg and builds the console.
func New(cfg Config) (*Console, error) {
	var errs []error
	if cfg.API == nil {
		errs = append(errs, errors.New("console: the API's handler is required"))
	}
	if len(cfg.Secret) == 0 {
		errs = append(errs, errors.New("console: the token secret is required"))
	}
	if cfg.DB == nil || cfg.StateTable == "" {
		errs = append(errs, errors.New("console: the state table and its client are required"))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	p, err := newPages()
	if err != nil {
		return nil, err
	}
	c := &Console{cfg: cfg, mux: http.NewServeMux(), pages: p}
	c.routes()
	return c, nil
}

// Paths are the console's own paths; every other path is the API's.
const (
	consolePrefix = "/console/"
	docsPath      = "/docs"
)

func (c *Console) routes() {
	c.mux.HandleFunc("GET /{$}", c.pages.console)
	c.mux.HandleFunc("GET "+docsPath, c.pages.docs)
	c.mux.Handle("GET "+consolePrefix+"static/", http.StripPrefix(consolePrefix+"static/", c.pages.static))
	c.mux.HandleFunc("GET "+consolePrefix+"lib/{file}", c.library)
	c.mux.HandleFunc("POST "+consolePrefix+"api/token", c.token)
	c.mux.HandleFunc("GET "+consolePrefix+"api/stack", c.stack)
	c.mux.HandleFunc("GET "+consolePrefix+"api/traces/{traceId}", c.trace)
}

// ServeHTTP serves the console's paths to loopback callers and passes
// every other request to the API, untouched.
func (c *Console) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !c.owns(r.URL.Path) {
		c.cfg.API.ServeHTTP(w, r)
		return
	}
	if !loopback(r) {
		http.Error(w, "the console answers on loopback only", http.StatusForbidden)
		return
	}
	h := w.Header()
	h.Set("Content-Security-Policy", c.pages.csp)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Cache-Control", "no-store")
	c.mux.ServeHTTP(w, r)
}

// owns reports whether a path is the console's rather than the API's.
func (c *Console) owns(path string) bool {
	return path == "/" || path == docsPath || strings.HasPrefix(path, consolePrefix)
}

// loopback reports whether a request came from this machine and names it
// by a loopback address or localhost: the second keeps a page of another
// site, its name rebound to 127.0.0.1, from reading a token.
func loopback(r *http.Request) bool {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return false
	}
	if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
		return false
	}
	name := r.Host
	if h, _, err := net.SplitHostPort(r.Host); err == nil {
		name = h
	}
	name = strings.Trim(name, "[]")
	if name == "localhost" {
		return true
	}
	ip := net.ParseIP(name)
	return ip != nil && ip.IsLoopback()
}
