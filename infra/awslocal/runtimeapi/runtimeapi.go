// Package runtimeapi is Lambda's Runtime API for one execution
// environment, served on loopback: a real function bootstrap, started
// with AWS_LAMBDA_RUNTIME_API set to the server's address, asks it for
// invocations (GET /2018-06-01/runtime/invocation/next) and posts their
// outcomes, as it does in AWS. The caller queues invocations (Invoke)
// and reads each outcome (Call.Wait): a buffered response, a streamed one
// chunk by chunk as it arrives (Call.Chunks) with its headers and
// trailers, a function error, an init error, a timeout, or the runtime
// gone (its process died, or its connection dropped mid-response). A
// runtime the server started (StartRuntime) is watched: when it exits,
// the invocation it held ends with KindExited and the caller may start
// another. The Extensions API's register and event/next are served for
// internal extensions (INVOKE events; the traces exporter's is one).
//
// Unlike the Runtime Interface Emulator, which reads a response whole
// before answering its caller, this server shows how a response arrives:
// that is what the events function's wire test and the resume tests need.
// It holds one environment: one invocation at a time, the next handed out
// only once the runtime and every extension asked for it. Several
// environments are several servers.
package runtimeapi

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/commonly/runtime/internal/loopback"
)

// EndpointVar is the variable a runtime reads the API's host:port from.
const EndpointVar = "AWS_LAMBDA_RUNTIME_API"

// The Runtime API's headers (docs: runtimes-api.html).
const (
	HeaderRequestID    = "Lambda-Runtime-Aws-Request-Id"
	HeaderDeadlineMs   = "Lambda-Runtime-Deadline-Ms"
	HeaderFunctionARN  = "Lambda-Runtime-Invoked-Function-Arn"
	HeaderTraceID      = "Lambda-Runtime-Trace-Id"
	HeaderClientCtx    = "Lambda-Runtime-Client-Context"
	HeaderCognito      = "Lambda-Runtime-Cognito-Identity"
	HeaderTenantID     = "Lambda-Runtime-Aws-Tenant-Id"
	HeaderErrorType    = "Lambda-Runtime-Function-Error-Type"
	HeaderErrorBody    = "Lambda-Runtime-Function-Error-Body"
	HeaderResponseMode = "Lambda-Runtime-Function-Response-Mode"
)

// Defaults of Config.
const (
	DefaultFunctionName = "function"
	DefaultRegion       = "us-east-1"
	DefaultAccount      = "123456789012"
	// DefaultTimeout is Lambda's longest: a test sets the function's own.
	DefaultTimeout = 15 * time.Minute
	// MaxResponse bounds a recorded response: Lambda's streamed limit.
	MaxResponse = 200 << 20
)

// Config describes the function the environment runs.
type Config struct {
	// FunctionName, Region and Account make the invoked function's ARN
	// and the environment's variables (Env); zero values are the defaults.
	FunctionName, Region, Account string
	// Timeout is the function's timeout: an invocation's deadline is its
	// start plus Timeout unless it sets its own. Zero is DefaultTimeout.
	Timeout time.Duration
}

// Server is one execution environment's Runtime API.
type Server struct {
	cfg  Config
	http *loopback.Server
	// Addr is the API's host:port, the value of AWS_LAMBDA_RUNTIME_API.
	Addr string

	mu         sync.Mutex
	queue      []*Call
	current    *Call // handed out, not yet ended
	calls      map[string]*Call
	runtimes   []*waiter // runtimes waiting in invocation/next
	extensions map[string]*extension
	initErrs   []InitError
	owned      []*Runtime
	closed     bool
	closing    chan struct{} // closed by Close: waiting handlers return
}

// InitError is what a runtime posted to /runtime/init/error.
type InitError struct {
	Type string
	Body []byte
}

// Start serves the API on a free loopback port.
func Start(cfg Config) (*Server, error) {
	if cfg.FunctionName == "" {
		cfg.FunctionName = DefaultFunctionName
	}
	if cfg.Region == "" {
		cfg.Region = DefaultRegion
	}
	if cfg.Account == "" {
		cfg.Account = DefaultAccount
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultTimeout
	}
	s := &Server{cfg: cfg, calls: map[string]*Call{}, extensions: map[string]*extension{}, closing: make(chan struct{})}
	srv, err := loopback.Serve("127.0.0.1:0", s)
	if err != nil {
		return nil, fmt.Errorf("runtime API stand-in: %w", err)
	}
	s.http, s.Addr = srv, strings.TrimPrefix(srv.URL, "http://")
	return s, nil
}

// FunctionARN is the invoked function's ARN, as invocations carry it.
func (s *Server) FunctionARN() string {
	return "arn:aws:lambda:" + s.cfg.Region + ":" + s.cfg.Account + ":function:" + s.cfg.FunctionName
}

// Env is what Lambda sets in a function's environment that a runtime
// and the SDK read: the API's address, the function's name, version and
// memory, the region.
func (s *Server) Env() map[string]string {
	return map[string]string{
		EndpointVar:                       s.Addr,
		"AWS_LAMBDA_FUNCTION_NAME":        s.cfg.FunctionName,
		"AWS_LAMBDA_FUNCTION_VERSION":     "$LATEST",
		"AWS_LAMBDA_FUNCTION_MEMORY_SIZE": "1024",
		"AWS_REGION":                      s.cfg.Region,
		"AWS_DEFAULT_REGION":              s.cfg.Region,
	}
}

// InitErrors are the init errors runtimes posted so far.
func (s *Server) InitErrors() []InitError {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]InitError(nil), s.initErrs...)
}

// Close ends the environment as Lambda does: the runtimes the server
// started get SIGTERM and, half a second later, SIGKILL; invocations not
// yet ended end with KindExited; then the server stops.
func (s *Server) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	close(s.closing)
	owned := s.owned
	pending := append(s.queue, s.current)
	s.queue, s.runtimes = nil, nil
	s.mu.Unlock()
	var errs []error
	deadline := time.Now().Add(500 * time.Millisecond)
	for _, r := range owned {
		errs = append(errs, r.stop(deadline))
	}
	for _, c := range pending {
		if c != nil {
			s.end(c, &Outcome{Kind: KindExited, ErrorType: "Runtime.ExitError", Err: errors.New("the environment was closed")})
		}
	}
	errs = append(errs, s.http.Close())
	return errors.Join(errs...)
}

func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	path := r.URL.Path
	if rest, ok := strings.CutPrefix(path, "/2018-06-01/runtime/"); ok {
		switch {
		case rest == "invocation/next" && r.Method == http.MethodGet:
			s.next(w, r)
		case rest == "init/error" && r.Method == http.MethodPost:
			s.initError(w, r)
		case strings.HasPrefix(rest, "invocation/") && r.Method == http.MethodPost:
			id, kind, _ := strings.Cut(strings.TrimPrefix(rest, "invocation/"), "/")
			switch kind {
			case "response":
				s.response(w, r, id)
			case "error":
				s.invocationError(w, r, id)
			default:
				notFound(w)
			}
		default:
			notFound(w)
		}
		return
	}
	if rest, ok := strings.CutPrefix(path, "/2020-01-01/extension/"); ok {
		switch {
		case rest == "register" && r.Method == http.MethodPost:
			s.register(w, r)
		case rest == "event/next" && r.Method == http.MethodGet:
			s.extensionNext(w, r)
		case (rest == "init/error" || rest == "exit/error") && r.Method == http.MethodPost:
			s.initError(w, r)
		default:
			notFound(w)
		}
		return
	}
	notFound(w)
}

// renderError answers as the Runtime API does: {errorMessage, errorType}.
func renderError(w http.ResponseWriter, status int, typ, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]string{"errorMessage": msg, "errorType": typ})
}

func notFound(w http.ResponseWriter) {
	renderError(w, http.StatusNotFound, "NotFound", "not a path of the Runtime API")
}

// accepted is the API's 202 to a posted outcome.
func accepted(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusAccepted)
	_, _ = w.Write([]byte(`{"status":"OK"}` + "\n"))
}

// newID is a random UUID (version 4), as Lambda's request ids are.
func newID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	h := hex.EncodeToString(b[:])
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}

// newTraceHeader is an X-Ray trace header as Lambda passes it.
func newTraceHeader(now time.Time) string {
	var b [20]byte
	_, _ = rand.Read(b[:])
	h := hex.EncodeToString(b[:])
	return fmt.Sprintf("Root=1-%08x-%s;Parent=%s;Sampled=0", now.Unix(), h[:24], h[24:40])
}
