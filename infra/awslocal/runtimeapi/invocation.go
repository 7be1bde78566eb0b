package runtimeapi

import (
	"context"
	"errors"
	"iter"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"time"
)

// Invocation is one event for the function.
type Invocation struct {
	// Payload is the event, as the runtime receives it.
	Payload []byte
	// RequestID is the invocation's id; empty: a new UUID.
	RequestID string
	// Deadline is when Lambda would end the invocation; zero: its start
	// plus the function's timeout.
	Deadline time.Time
	// TraceID is the Lambda-Runtime-Trace-Id header (an X-Ray trace
	// header); empty: a new one, not sampled.
	TraceID string
	// ClientContext, CognitoIdentity and TenantID are passed as their
	// headers when set.
	ClientContext, CognitoIdentity, TenantID string
}

// Kind is how an invocation ended.
type Kind string

const (
	// KindResponse: the runtime posted a response (buffered or streamed;
	// a streamed one cut by the function's error has ErrorType set from
	// its trailers).
	KindResponse Kind = "response"
	// KindError: the runtime posted an invocation error.
	KindError Kind = "error"
	// KindTimeout: the deadline passed first. Lambda ends the
	// environment then: a runtime the server started is killed.
	KindTimeout Kind = "timeout"
	// KindExited: the runtime went away before its outcome was whole
	// (its process exited, or its connection dropped mid-response), or
	// the environment was closed.
	KindExited Kind = "exited"
)

// Chunk is a piece of a response body as it arrived: one chunk of the
// runtime's chunked request body.
type Chunk struct {
	Data []byte
	At   time.Time
}

// Outcome is how an invocation ended and what the runtime sent.
type Outcome struct {
	Kind Kind
	// Header is the posted response's or error's request headers
	// (Content-Type, Lambda-Runtime-Function-Response-Mode, ...).
	Header http.Header
	// TransferEncoding is the post's (["chunked"] for a streamed body).
	TransferEncoding []string
	// DeclaredTrailers are the trailers the post announced in its
	// Trailer header; Trailer has those that came after the body.
	DeclaredTrailers []string
	Trailer          http.Header
	// Chunks are the body's chunks in arrival order; Body is all of them.
	Chunks []Chunk
	Body   []byte
	// ErrorType is the function's error type: the error post's header,
	// a streamed response's Lambda-Runtime-Function-Error-Type trailer,
	// Sandbox.Timedout or Runtime.ExitError.
	ErrorType string
	// Err says why an invocation ended without the runtime's word.
	Err error
	// Started is when the runtime took the invocation; Ended when its
	// outcome was whole.
	Started, Ended time.Time
}

// Call is a queued invocation, then its outcome.
type Call struct {
	// RequestID is the invocation's id.
	RequestID string
	inv       Invocation
	deadline  time.Time
	startTime time.Time
	started   chan struct{}
	done      chan struct{}

	mu       sync.Mutex
	answered bool // a response or error post began
	chunks   []Chunk
	more     chan struct{} // closed and replaced at each chunk
	outcome  *Outcome
	timer    *time.Timer
}

// Invoke queues inv; the runtime gets it when it next asks, once the
// invocations before it ended.
func (s *Server) Invoke(inv Invocation) *Call {
	if inv.RequestID == "" {
		inv.RequestID = newID()
	}
	c := &Call{RequestID: inv.RequestID, inv: inv, started: make(chan struct{}), done: make(chan struct{}), more: make(chan struct{})}
	s.mu.Lock()
	closed := s.closed
	if !closed {
		s.calls[c.RequestID] = c
		s.queue = append(s.queue, c)
	}
	s.mu.Unlock()
	if closed {
		s.end(c, &Outcome{Kind: KindExited, ErrorType: "Runtime.ExitError", Err: errors.New("the environment was closed")})
		return c
	}
	s.dispatch()
	return c
}

// InvokeWait invokes and waits for the outcome.
func (s *Server) InvokeWait(ctx context.Context, inv Invocation) (*Outcome, error) {
	return s.Invoke(inv).Wait(ctx)
}

// Started is closed when the runtime has taken the invocation.
func (c *Call) Started() <-chan struct{} { return c.started }

// Done is closed when the outcome is whole.
func (c *Call) Done() <-chan struct{} { return c.done }

// Deadline is the invocation's deadline, once started.
func (c *Call) Deadline() time.Time {
	<-c.started
	return c.deadline
}

// Wait returns the outcome once it is whole; the error is ctx's.
func (c *Call) Wait(ctx context.Context) (*Outcome, error) {
	select {
	case <-c.done:
		return c.outcome, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// Chunks yields the response's chunks from the first, each as soon as
// it has arrived, until the outcome is whole (or ctx ends: its error is
// yielded last). Any number of readers may range over it.
func (c *Call) Chunks(ctx context.Context) iter.Seq2[Chunk, error] {
	return func(yield func(Chunk, error) bool) {
		for i := 0; ; {
			c.mu.Lock()
			have, more, ended := c.chunks[i:], c.more, c.outcome != nil
			c.mu.Unlock()
			for _, ch := range have {
				if !yield(ch, nil) {
					return
				}
			}
			i += len(have)
			if len(have) > 0 {
				continue
			}
			if ended {
				return
			}
			select {
			case <-more:
			case <-c.done:
			case <-ctx.Done():
				yield(Chunk{}, ctx.Err())
				return
			}
		}
	}
}

// ended reports whether c has its outcome.
func (c *Call) ended() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.outcome != nil
}

// addChunk records a chunk as it arrives.
func (c *Call) addChunk(data []byte) {
	c.mu.Lock()
	c.chunks = append(c.chunks, Chunk{Data: data, At: time.Now()})
	close(c.more)
	c.more = make(chan struct{})
	c.mu.Unlock()
}

// answer marks the start of the runtime's post; false when it already
// answered or the invocation ended.
func (c *Call) answer() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.answered || c.outcome != nil {
		return false
	}
	c.answered = true
	return true
}

// end sets c's outcome unless it has one, frees the environment for the
// next invocation and reports whether this was the outcome.
func (s *Server) end(c *Call, o *Outcome) bool {
	c.mu.Lock()
	if c.outcome != nil {
		c.mu.Unlock()
		return false
	}
	if o.Chunks == nil {
		o.Chunks = slices.Clone(c.chunks)
	}
	for _, ch := range o.Chunks {
		o.Body = append(o.Body, ch.Data...)
	}
	o.Ended = time.Now()
	o.Started = c.startTime
	c.outcome = o
	if c.timer != nil {
		c.timer.Stop()
	}
	c.mu.Unlock()
	s.mu.Lock()
	if s.current == c {
		s.current = nil
	}
	s.mu.Unlock()
	close(c.done)
	s.dispatch()
	return true
}

// waiter is a runtime waiting in invocation/next.
type waiter struct {
	call chan *Call // the invocation it is handed
}

// dispatch hands the next invocation to a waiting runtime when the
// environment is free: no invocation in flight, every extension waiting.
func (s *Server) dispatch() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed || s.current != nil || len(s.queue) == 0 || len(s.runtimes) == 0 {
		return
	}
	for _, x := range s.extensions {
		if x.waiting == nil {
			return
		}
	}
	c := s.queue[0]
	s.queue = s.queue[1:]
	w := s.runtimes[0]
	s.runtimes = s.runtimes[1:]
	s.current = c
	w.call <- c
}

// next is GET /runtime/invocation/next: it waits for an invocation.
func (s *Server) next(w http.ResponseWriter, r *http.Request) {
	wt := &waiter{call: make(chan *Call, 1)}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		renderError(w, http.StatusGone, "EnvironmentClosed", "the environment is closed")
		return
	}
	s.runtimes = append(s.runtimes, wt)
	s.mu.Unlock()
	s.dispatch()
	var c *Call
	select {
	case c = <-wt.call:
	case <-s.closing:
		renderError(w, http.StatusGone, "EnvironmentClosed", "the environment is closed")
		return
	case <-r.Context().Done():
		// The runtime went away while it waited. It may have been handed
		// an invocation just now: that one goes back to the front.
		s.mu.Lock()
		if i := slices.Index(s.runtimes, wt); i >= 0 {
			s.runtimes = slices.Delete(s.runtimes, i, i+1)
			s.mu.Unlock()
			return
		}
		select {
		case c = <-wt.call:
			if s.current == c && !c.ended() {
				s.current = nil
				s.queue = append([]*Call{c}, s.queue...)
			}
		default:
		}
		s.mu.Unlock()
		s.dispatch()
		return
	}
	s.begin(c)
	h := w.Header()
	h.Set(HeaderRequestID, c.RequestID)
	h.Set(HeaderDeadlineMs, strconv.FormatInt(c.deadline.UnixMilli(), 10))
	h.Set(HeaderFunctionARN, s.FunctionARN())
	h.Set(HeaderTraceID, c.inv.TraceID)
	for name, v := range map[string]string{HeaderClientCtx: c.inv.ClientContext, HeaderCognito: c.inv.CognitoIdentity, HeaderTenantID: c.inv.TenantID} {
		if v != "" {
			h.Set(name, v)
		}
	}
	h.Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(c.inv.Payload)
}

// begin starts c: its deadline and its timer, and INVOKE to each
// extension.
func (s *Server) begin(c *Call) {
	now := time.Now()
	c.mu.Lock()
	c.deadline = c.inv.Deadline
	if c.deadline.IsZero() {
		c.deadline = now.Add(s.cfg.Timeout)
	}
	c.startTime = now
	if c.inv.TraceID == "" {
		c.inv.TraceID = newTraceHeader(now)
	}
	c.timer = time.AfterFunc(time.Until(c.deadline), func() { s.timeout(c) })
	c.mu.Unlock()
	close(c.started)
	s.mu.Lock()
	for _, x := range s.extensions {
		x.invoke(c, s.FunctionARN())
	}
	s.mu.Unlock()
}

// timeout ends c at its deadline; Lambda then ends the environment.
func (s *Server) timeout(c *Call) {
	if !s.end(c, &Outcome{Kind: KindTimeout, ErrorType: "Sandbox.Timedout", Err: errors.New("task timed out")}) {
		return
	}
	s.mu.Lock()
	owned := slices.Clone(s.owned)
	s.mu.Unlock()
	for _, r := range owned {
		_ = r.Kill()
	}
}
