// Package handler is the events function's HTTP handler: GET
// /v1/runs/{runId}/events as Server-Sent Events, behind a Lambda
// function URL in RESPONSE_STREAM mode (lambdaurl), the caller's JWT
// checked here against the API's issuer and audience
// (docs/api.md, "Watching a run").
package handler

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"runtime/debug"
	"strconv"
	"strings"
	"time"

	"github.com/commonly/runtime/functions/internal/problem"
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
		problem.RouteNotFound("no route matches " + r.URL.Path).Write(w)
		return
	}
	if r.Method != http.MethodGet {
		w.Header().Set("Allow", http.MethodGet)
		problem.MethodNotAllowed("the events of a run are read with GET").Write(w)
		return
	}
	sse := &writer{w: w}
	defer func() {
		if p := recover(); p != nil {
			h.cfg.Log.ErrorContext(r.Context(), "events handler panicked", "runId", runID, "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
			if !sse.opened {
				problem.For(errors.New("panic")).Write(w)
			}
		}
	}()
	// Who asks comes first: without a valid token nothing else is looked
	// at, a malformed Last-Event-ID included.
	caller, err := h.caller(r)
	if err != nil {
		problem.For(err).Write(w)
		return
	}
	after, err := lastEventID(r)
	if err != nil {
		problem.For(err).Write(w)
		return
	}

	ctx, cancel := h.streamContext(r.Context())
	defer cancel()
	sent, started := 0, time.Now()
	err = h.cfg.Watcher.Watch(ctx, caller, runID, turns.WatchOptions{
		After: after, Poll: h.cfg.Poll, Heartbeat: h.cfg.Heartbeat,
		Open: sse.open,
		Send: func(e runs.StoredEvent) error { sent++; return sse.event(e) },
		Beat: sse.comment,
	})
	attrs := []any{"runId", runID, "userId", caller.ID, "after", after, "events", sent, "elapsedMs", time.Since(started).Milliseconds()}
	switch {
	case err == nil:
		h.cfg.Log.InfoContext(r.Context(), "run events sent", attrs...)
	case r.Context().Err() != nil:
		// The client left (or the invocation ended): nobody to answer.
		h.cfg.Log.InfoContext(r.Context(), "run events stream left by the client", attrs...)
	case errors.Is(err, turns.ErrStreamComplete):
		// The client has run.finished: 204 tells an SSE client to stop.
		h.cfg.Log.InfoContext(r.Context(), "run events complete already", attrs...)
		w.WriteHeader(http.StatusNoContent)
	case !sse.opened:
		// Nothing sent yet: an answer of its own.
		if errors.Is(err, errStreamDeadline) {
			err = turns.ErrUnavailable
		}
		p := problem.For(err)
		if p.Status >= 500 {
			h.cfg.Log.ErrorContext(r.Context(), "run events failed", append(attrs, "err", err)...)
		}
		p.Write(w)
	case errors.Is(err, errStreamDeadline):
		// The function's time is up: the client resumes with the last id.
		h.cfg.Log.InfoContext(r.Context(), "run events stream closed at its deadline", attrs...)
	default:
		h.cfg.Log.InfoContext(r.Context(), "run events stream ended", append(attrs, "reason", err.Error())...)
	}
}

// caller is who the request's token names. A request without one is
// turns.ErrUnauthenticated; a refused token the verifier's error (an
// invalid or expired token, or a malformed subject), logged with why.
func (h *Handler) caller(r *http.Request) (turns.Caller, error) {
	auth := r.Header.Get("Authorization")
	if auth == "" {
		return turns.Caller{}, turns.ErrUnauthenticated
	}
	claims, err := h.cfg.Verifier.Verify(r.Context(), auth)
	if err != nil {
		h.cfg.Log.InfoContext(r.Context(), "rejected token", "reason", err.Error())
		if !errors.Is(err, turns.ErrInvalidToken) && !errors.Is(err, turns.ErrMalformedIdentity) {
			err = fmt.Errorf("%w: %w", turns.ErrInvalidToken, err)
		}
		return turns.Caller{}, err
	}
	c := turns.CallerFromClaims(claims)
	if c.ID == "" {
		return turns.Caller{}, turns.ErrUnauthenticated
	}
	return c, nil
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
	if err != nil || id < 0 { // the upper bound is Watch's
		return 0, turns.Invalid("Last-Event-ID", "must be an event id: an integer from 0 to %d", int64(turns.MaxEventID))
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

// open sends the headers, the reconnection delay and a first comment at
// once, so a client (and any proxy) sees the stream begin before the
// first event.
func (s *writer) open() error {
	if s.opened {
		return nil
	}
	s.opened = true
	h := s.w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	s.w.WriteHeader(http.StatusOK)
	_, err := fmt.Fprintf(s.w, "retry: %d\n: open\n\n", RetryMillis)
	s.flush()
	return err
}

// event writes one event: its id, its type and its data, one JSON object
// on one line (encoding/json escapes line breaks inside strings).
func (s *writer) event(e runs.StoredEvent) error {
	if err := s.open(); err != nil {
		return err
	}
	_, err := io.WriteString(s.w, "id: "+strconv.FormatInt(e.ID, 10)+"\nevent: "+string(e.Type)+"\ndata: "+e.Data+"\n\n")
	s.flush()
	return err
}

// comment is the heartbeat: a comment line every client ignores.
func (s *writer) comment() error {
	if err := s.open(); err != nil {
		return err
	}
	_, err := io.WriteString(s.w, ": ping\n\n")
	s.flush()
	return err
}

func (s *writer) flush() {
	if f, ok := s.w.(http.Flusher); ok {
		f.Flush()
	}
}
