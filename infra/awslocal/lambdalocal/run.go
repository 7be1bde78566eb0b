package lambdalocal

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-lambda-go/lambdacontext"
)

// Lambda's defaults for an asynchronous invocation: two retries of a
// failed one. Lambda waits about a minute before the first and two before
// the second; locally a second, so that a retry is seen while one waits.
const (
	DefaultRetries    = 2
	DefaultRetryDelay = time.Second
)

// RunConfig is a stand-in that runs its asynchronous invocations itself.
type RunConfig struct {
	// Run is one invocation of the function: its handler's entry point,
	// given the payload. An error is a failed invocation.
	Run func(ctx context.Context, payload []byte) error
	// Timeout is the function's timeout: each invocation's context ends
	// there, as Lambda ends an invocation. Zero: no deadline.
	Timeout time.Duration
	// Retries of a failed invocation (nil: DefaultRetries), RetryDelay
	// before each (zero: DefaultRetryDelay).
	Retries    *int
	RetryDelay time.Duration
	// Log receives failed invocations; nil discards.
	Log *slog.Logger
}

// invocation is an Invoke of type Event that was accepted.
type invocation struct {
	function string
	payload  []byte
}

// Start serves on a free loopback port and runs each accepted
// asynchronous invocation in a goroutine of its own, as Lambda runs it in
// an invocation of its own: the caller has its 202 before the invocation
// starts. names are the function's names (its name, its ARN).
func Start(cfg RunConfig, names ...string) (*Server, error) {
	if cfg.Run == nil {
		return nil, fmt.Errorf("lambda stand-in: RunConfig.Run is nil")
	}
	retries := DefaultRetries
	if cfg.Retries != nil {
		retries = *cfg.Retries
	}
	if cfg.RetryDelay == 0 {
		cfg.RetryDelay = DefaultRetryDelay
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	ctx, cancel := context.WithCancel(context.Background())
	r := &runner{cfg: cfg, retries: retries, ctx: ctx, cancel: cancel}
	s := &Server{names: names, runner: r}
	if err := s.serve(); err != nil {
		cancel()
		return nil, err
	}
	return s, nil
}

type runner struct {
	cfg     RunConfig
	retries int
	ctx     context.Context
	cancel  context.CancelFunc
	mu      sync.Mutex
	closed  bool
	wg      sync.WaitGroup
	seq     atomic.Int64
}

// start runs inv in a goroutine of its own; false once closed.
func (r *runner) start(inv invocation) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return false
	}
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		r.run(inv)
	}()
	return true
}

// run is one asynchronous invocation with its retries, each attempt with
// a request id of its own in its context, as Lambda gives it.
func (r *runner) run(inv invocation) {
	for attempt := 0; ; attempt++ {
		err := r.attempt(inv)
		if err == nil || r.ctx.Err() != nil {
			return
		}
		if attempt == r.retries {
			r.cfg.Log.Error("asynchronous invocation failed, retries exhausted", "function", inv.function, "attempts", attempt+1, "err", err)
			return
		}
		r.cfg.Log.Warn("asynchronous invocation failed; retried", "function", inv.function, "attempt", attempt+1, "err", err)
		select {
		case <-r.ctx.Done():
			return
		case <-time.After(r.cfg.RetryDelay):
		}
	}
}

func (r *runner) attempt(inv invocation) (err error) {
	ctx := lambdacontext.NewContext(r.ctx, &lambdacontext.LambdaContext{
		AwsRequestID: fmt.Sprintf("local-invocation-%d-%d", time.Now().UnixMilli(), r.seq.Add(1)),
	})
	if r.cfg.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, r.cfg.Timeout)
		defer cancel()
	}
	defer func() {
		// A panic fails the invocation, as it fails Lambda's.
		if p := recover(); p != nil {
			err = fmt.Errorf("invocation panicked: %v", p)
		}
	}()
	return r.cfg.Run(ctx, inv.payload)
}

// Wait blocks until no invocation runs or waits for a retry: those
// started by the ones running (a dispatch a turn makes) included, since
// an invocation is accepted before the one that made it returns.
func (s *Server) Wait() { s.runner.wg.Wait() }

// close refuses new invocations, cancels the running ones and waits.
func (r *runner) close() {
	r.mu.Lock()
	r.closed = true
	r.mu.Unlock()
	r.cancel()
	r.wg.Wait()
}

// Invocation is an asynchronous invocation a taking stand-in kept.
type Invocation struct {
	Function string
	Payload  []byte
}

// StartTaking serves on a free loopback port and keeps each accepted
// asynchronous invocation instead of running it, for a test that checks
// what a function dispatched, or runs it itself (Take).
func StartTaking(names ...string) (*Server, error) {
	if len(names) == 0 {
		return nil, fmt.Errorf("lambda stand-in: no function name")
	}
	t := &taken{function: names[0]}
	s, err := Start(RunConfig{Run: t.run, Retries: new(int)}, names...)
	if err != nil {
		return nil, err
	}
	s.taken = t
	return s, nil
}

// Take returns the invocations kept since the last Take, once every
// accepted one is kept; nil unless the stand-in is taking (StartTaking).
func (s *Server) Take() []Invocation {
	if s.taken == nil {
		return nil
	}
	s.Wait()
	s.taken.mu.Lock()
	defer s.taken.mu.Unlock()
	q := s.taken.q
	s.taken.q = nil
	return q
}

// taken keeps the invocations of a taking stand-in.
type taken struct {
	function string
	mu       sync.Mutex
	q        []Invocation
}

func (t *taken) run(_ context.Context, payload []byte) error {
	t.mu.Lock()
	t.q = append(t.q, Invocation{Function: t.function, Payload: payload})
	t.mu.Unlock()
	return nil
}
