// Package handler is the events function's HTTP handler: GET
// /v1/runs/{runId}/events as Server-Sent Events, behind a Lambda
// function URL in RESPONSE_STREAM mode (lambdaurl), the caller's JWT
// checked here against the API's issuer and audience
// (docs/api.md, "Watching a run").
package handler

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/commonly/runtime/shared/runs"
	"github.com/commonly/runtime/shared/turns"
)

// Defaults of Config.
const (
	// DefaultMaxStream bounds one response: a client resumes with
	// Last-Event-ID. Under the function URL's 15 minutes.
	DefaultMaxStream = 14 * time.Minute
	// DefaultMargin is how long before the invocation's deadline the
	// stream is closed, so it closes cleanly rather than being cut.
	DefaultMargin = 5 * time.Second
	// RetryMillis is the reconnection delay the stream asks clients for.
	RetryMillis = 1000
)

// Verifier checks an Authorization header's bearer token for the API's
// issuer and audience and returns its claims, flattened to strings as
// API Gateway's JWT authorizer passes them.
type Verifier interface {
	Verify(ctx context.Context, authorization string) (map[string]string, error)
}

// VerifierFunc adapts a function to a Verifier.
type VerifierFunc func(ctx context.Context, authorization string) (map[string]string, error)

// Verify calls f.
func (f VerifierFunc) Verify(ctx context.Context, authorization string) (map[string]string, error) {
	return f(ctx, authorization)
}

// Config wires a Handler.
type Config struct {
	// Watcher and Verifier are required.
	Watcher  *turns.Watcher
	Verifier Verifier
	// MaxStream and Margin bound a response (zero: the defaults).
	MaxStream time.Duration
	Margin    time.Duration
	// Poll and Heartbeat are the watch's (zero: turns' defaults).
	Poll      time.Duration
	Heartbeat time.Duration
	// Log gets one line per stream; nil means slog.Default().
	Log *slog.Logger
}

// Handler serves the event stream.
type Handler struct{ cfg Config }

// New checks cfg and fills its defaults.
func New(cfg Config) (*Handler, error) {
	if cfg.Watcher == nil || cfg.Verifier == nil {
		return nil, errors.New("events handler: a watcher and a verifier are required")
	}
	if cfg.MaxStream <= 0 {
		cfg.MaxStream = DefaultMaxStream
	}
	if cfg.Margin <= 0 {
		cfg.Margin = DefaultMargin
	}
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	return &Handler{cfg: cfg}, nil
}

// RunID is the run of an events path, ok false for any other path.
func RunID(path string) (string, bool) {
	rest, ok := strings.CutPrefix(path, "/v1/runs/")
	if !ok {
		return "", false
	}
	id, ok := strings.CutSuffix(rest, "/events")
	if !ok || id == "" || strings.Contains(id, "/") {
		return "", false
	}
	return id, true
}

func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	runID, ok := RunID(r.URL.Path)
	if !ok {
		writeProblem(w, http.StatusNotFound, "not_found", "Not found", "no such route")
		return
	}
	if r.Method != http.MethodGet {
		w.Header().Set("Allow", http.MethodGet)
		writeProblem(w, http.StatusMethodNotAllowed, "method_not_allowed", "Method not allowed", "the events of a run are read with GET")
		return
	}
	var caller turns.Caller
	if claims, err := h.cfg.Verifier.Verify(r.Context(), r.Header.Get("Authorization")); err == nil {
		caller = turns.CallerFromClaims(claims)
	} else if r.Header.Get("Authorization") != "" {
		h.cfg.Log.InfoContext(r.Context(), "rejected token", "reason", err.Error())
	}
	after, err := lastEventID(r)
	if err != nil {
		p := problemFor(err)
		writeProblem(w, p.status, p.slug, p.title, p.detail)
		return
	}

	ctx, cancel := h.streamContext(r.Context())
	defer cancel()
	sse := &writer{w: w}
	sent, started := 0, time.Now()
	err = h.cfg.Watcher.Watch(ctx, caller, runID, turns.WatchOptions{
		After: after, Poll: h.cfg.Poll, Heartbeat: h.cfg.Heartbeat,
		Send: func(e runs.StoredEvent) error { sent++; return sse.event(e) },
		Beat: sse.comment,
	})
	attrs := []any{"runId", runID, "userId", caller.ID, "after", after, "events", sent, "elapsedMs", time.Since(started).Milliseconds()}
	switch {
	case err == nil:
		h.cfg.Log.InfoContext(r.Context(), "run events sent", attrs...)
	case !sse.opened:
		// Nothing sent yet: an answer of its own.
		p := problemFor(err)
		if p.status >= 500 {
			h.cfg.Log.ErrorContext(r.Context(), "run events failed", append(attrs, "err", err)...)
		}
		writeProblem(w, p.status, p.slug, p.title, p.detail)
	case errors.Is(err, errStreamDeadline):
		// The function's time is up: the client resumes with the last id.
		h.cfg.Log.InfoContext(r.Context(), "run events stream closed at its deadline", attrs...)
	default:
		h.cfg.Log.InfoContext(r.Context(), "run events stream ended", append(attrs, "reason", err.Error())...)
	}
}

// errStreamDeadline ends a stream whose time is up.
var errStreamDeadline = errors.New("the stream's time is up")

// streamContext bounds a stream by MaxStream and by the invocation's
// deadline less the margin.
func (h *Handler) streamContext(ctx context.Context) (context.Context, context.CancelFunc) {
	end := time.Now().Add(h.cfg.MaxStream)
	if d, ok := ctx.Deadline(); ok && d.Add(-h.cfg.Margin).Before(end) {
		end = d.Add(-h.cfg.Margin)
	}
	return context.WithDeadlineCause(ctx, end, errStreamDeadline)
}

// lastEventID is the Last-Event-ID header (or, for clients that cannot
// set headers, the lastEventId query parameter); 0 when absent.
func lastEventID(r *http.Request) (int64, error) {
	v := r.Header.Get("Last-Event-ID")
	if v == "" {
		v = r.URL.Query().Get("lastEventId")
	}
	if v == "" {
		return 0, nil
	}
	id, err := strconv.ParseInt(v, 10, 64)
	if err != nil || id < 0 {
		return 0, turns.Invalid("Last-Event-ID", "must be an event id: a non-negative integer")
	}
	return id, nil
}

// writer writes the SSE format (WHATWG HTML §9.2). Hand-written: it is
// four field lines, and SSE libraries for Go want an http.Flusher, which
// lambdaurl's writer is not (each Write leaves as a chunk of its own).
type writer struct {
	w      http.ResponseWriter
	opened bool
}

func (s *writer) open() {
	if s.opened {
		return
	}
	s.opened = true
	h := s.w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	s.w.WriteHeader(http.StatusOK)
	_, _ = fmt.Fprintf(s.w, "retry: %d\n\n", RetryMillis)
}

// event writes one event: its id, its type and its data, one JSON object
// on one line (encoding/json escapes line breaks inside strings).
func (s *writer) event(e runs.StoredEvent) error {
	s.open()
	_, err := io.WriteString(s.w, "id: "+strconv.FormatInt(e.ID, 10)+"\nevent: "+string(e.Type)+"\ndata: "+e.Data+"\n\n")
	s.flush()
	return err
}

// comment is the heartbeat: a comment line every client ignores.
func (s *writer) comment() error {
	s.open()
	_, err := io.WriteString(s.w, ": ping\n\n")
	s.flush()
	return err
}

func (s *writer) flush() {
	if f, ok := s.w.(http.Flusher); ok {
		f.Flush()
	}
}

// problemBody is the API's problem shape (application/problem+json).
type problemBody struct {
	status              int
	slug, title, detail string
}

// ProblemTypeBase prefixes every problem type, as on the API.
const ProblemTypeBase = "https://commonly.dev/problems/"

func problemFor(err error) problemBody {
	var inv *turns.InvalidError
	switch {
	case errors.As(err, &inv):
		return problemBody{http.StatusBadRequest, "invalid_field", "A field of the request is invalid", inv.Field + " " + inv.Reason}
	case errors.Is(err, turns.ErrUnauthenticated):
		return problemBody{http.StatusUnauthorized, "unauthenticated", "No identity", "the request carries no authenticated identity"}
	case errors.Is(err, turns.ErrMalformedIdentity):
		return problemBody{http.StatusUnauthorized, "malformed_identity", "Malformed identity", "the token's subject is not a valid user id"}
	case errors.Is(err, turns.ErrNotFound):
		return problemBody{http.StatusNotFound, "not_found", "Not found", "no such install or run"}
	case errors.Is(err, turns.ErrUnavailable), errors.Is(err, errStreamDeadline):
		return problemBody{http.StatusServiceUnavailable, "unavailable", "Temporarily unavailable", "a dependency is unavailable; retry later"}
	}
	return problemBody{http.StatusInternalServerError, "internal", "Internal error", "the request could not be completed"}
}

func writeProblem(w http.ResponseWriter, status int, slug, title, detail string) {
	body, _ := json.Marshal(map[string]any{"type": ProblemTypeBase + slug, "title": title, "status": status, "detail": detail})
	w.Header().Set("Content-Type", "application/problem+json")
	if status == http.StatusServiceUnavailable {
		w.Header().Set("Retry-After", "5")
	}
	w.WriteHeader(status)
	_, _ = w.Write(body)
}
