package agent

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"sync"
	"time"

	"github.com/commonly/runtime/shared/llm"
	"github.com/commonly/runtime/shared/runs"
	"github.com/commonly/runtime/shared/tools"
)

// Config configures a Loop. Zero values are the documented defaults;
// New refuses a configuration the loop cannot run with.
type Config struct {
	// Model, Pricer and Poster are required.
	Model  Model
	Pricer Pricer
	Poster Poster

	// ModelName is the proxy's model name: sent on every call, and the
	// key the calls are priced under, unless a turn names its own
	// (TurnInput.Model). Required.
	ModelName string
	// MaxOutputTokens caps each call's output, reasoning included; zero
	// means DefaultMaxOutputTokens.
	MaxOutputTokens int64
	// Limits bound each turn; zero fields are their defaults.
	Limits Limits
	// Stream asks the model for its answers streamed, so the run's
	// text.delta events follow the answer as it is written (stream.go).
	Stream bool
	// SearchProvider and SandboxProvider name the providers tool usage is
	// priced for.
	SearchProvider  string
	SandboxProvider string

	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// Logger receives ids, counts and timings, never message text; nil
	// discards.
	Logger *slog.Logger
}

// Loop runs native turns. Its configuration is fixed by New and only
// read by Run, so one Loop serves concurrent turns.
type Loop struct {
	cfg Config
}

// New checks cfg, so that main refuses to start instead of failing every
// turn, and fills its defaults.
func New(cfg Config) (*Loop, error) {
	if err := cfg.validate(); err != nil {
		return nil, fmt.Errorf("agent: %w", err)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.MaxOutputTokens == 0 {
		cfg.MaxOutputTokens = DefaultMaxOutputTokens
	}
	cfg.Limits = cfg.Limits.withDefaults()
	return &Loop{cfg: cfg}, nil
}

// validate reports what the loop cannot run with.
func (c *Config) validate() error {
	var errs []error
	if c.Model == nil {
		errs = append(errs, errors.New("no model client"))
	}
	if c.Pricer == nil {
		errs = append(errs, errors.New("no pricer"))
	}
	if c.Poster == nil {
		errs = append(errs, errors.New("no poster"))
	}
	if c.ModelName == "" {
		errs = append(errs, errors.New("no model name"))
	}
	if c.MaxOutputTokens < 0 {
		errs = append(errs, fmt.Errorf("max output tokens %d is negative", c.MaxOutputTokens))
	}
	return errors.Join(errs...)
}

// TurnInput is one turn to run.
type TurnInput struct {
	// Run is the turn's record, already running. The loop fills Model,
	// Steps, Tokens, Cost, CostMicros, FinalMessage, PostedToPod and, on
	// return, Status, ErrorKind, ErrorMessage and CompletedAt. It does not
	// set Refunded: the run's writer does (runs.RefundDue), with the write
	// that gives the turn back.
	Run *runs.Run
	// System is the system prompt; empty sends none.
	System string
	// Message is the user's message.
	Message string
	// Tools is the gate's decision for this install; nil offers none.
	Tools Toolset
	// Env is passed to every tool call and to the final post.
	Env tools.Env
	// Model, when set, is the model this turn calls and is priced under
	// instead of Config.ModelName (an install's choice).
	Model string
	// Checkpoint saves the run's progress between model calls, so a
	// client polling the run sees its steps. It is not called for the
	// final state, which the caller writes once when Run returns: with
	// that write a turn costs one store call per model call. Optional; a
	// failed checkpoint is logged and the turn goes on.
	Checkpoint func(ctx context.Context, r *runs.Run) error
	// Events receives the turn's events as they happen (events.go);
	// optional.
	Events runs.Recorder
	// Journal receives what another attempt needs to go on with the turn
	// (journal.go); optional: without it a turn cannot be resumed.
	Journal Journal
	// Resume, when set, is the journal of an attempt that stopped: the
	// turn goes on from it (resume.go).
	Resume *Resume
	// Leave reports whether a turn interrupted by cause (its context's)
	// leaves its run for another attempt to resume instead of ending it:
	// the invocation is ending with the turn's bounds left. Optional.
	Leave func(cause error) bool
}

// TurnResult is what the caller needs beyond the run itself.
type TurnResult struct {
	// Infrastructure is true when the turn failed for an infrastructure
	// reason (Error.Infrastructure). Whether that refunds the turn is
	// decided by the run's writer with runs.RefundDue: only if no model
	// call answered.
	Infrastructure bool
	// Err is why the turn did not succeed (an *Error), nil when it did.
	Err error
	// PostErr is set when the turn succeeded but its final answer could
	// not be posted to the pod.
	PostErr error
	// Leave: the turn stopped without ending, its run left running for
	// another attempt to resume (TurnInput.Leave, or a resumed attempt
	// whose record could not be written); its progress is in the run and
	// the journal, and the caller writes it without a final status.
	Leave bool
}

// Run runs one turn to a final status, on every path: bounds, model and
// tool failures, cancellation and panics all end in a final run that the
// caller writes once.
func (l *Loop) Run(ctx context.Context, t TurnInput) (out TurnResult) {
	if t.Run == nil {
		return TurnResult{Err: configError("agent: the turn has no run")}
	}
	if t.Run.Status.Final() {
		// A final run never changes; running it again would charge twice.
		return TurnResult{Err: configError("agent: run %s is already %s", t.Run.RunID, t.Run.Status)}
	}
	tr := l.newTurn(t)
	defer func() {
		if p := recover(); p != nil {
			tr.log.Error("turn panicked", "step", len(tr.run.Steps)-1, "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
			out = tr.finish(&Error{Kind: runs.ErrUnknown, Message: msgInternal, Err: fmt.Errorf("panic: %v", p)})
		}
	}()
	return tr.loop(ctx)
}

// turn is the state of one Run.
type turn struct {
	l      *Config
	t      TurnInput
	run    *runs.Run
	tools  Toolset
	model  string // the model called and priced
	now    func() time.Time
	log    *slog.Logger
	budget budget
	maxOut int64
	// callMaxOut is the next call's output cap, maxOut unless the run's
	// reservation under a spend cap sizes it (capped, fitCall).
	callMaxOut int64

	specs     []llm.ToolSpec
	specBytes int64
	messages  []llm.Message
	repeat    repeatBreaker
	// posted is set when a tool posted to the pod in this turn, so the
	// final answer is not posted a second time.
	posted bool
	// sandboxSeen are the sandboxes announced by a sandbox.created event
	// (a tool's progress may report one from its own goroutine).
	sandboxMu   sync.Mutex
	sandboxSeen map[string]bool
	// pending: journal entries were appended since the last checkpoint.
	pending bool
	// lastCost is the last recorded step's price, by part.
	lastCost runs.Cost
	// ctx is the turn's context, for finish to tell a leave (TurnInput.Leave).
	ctx context.Context
}

func (l *Loop) newTurn(t TurnInput) *turn {
	// New filled the clock, the logger, the output cap and the limits.
	tr := &turn{l: &l.cfg, t: t, run: t.Run, tools: t.Tools, model: cmp.Or(t.Model, l.cfg.ModelName), now: l.cfg.Now, log: l.cfg.Logger, maxOut: l.cfg.MaxOutputTokens}
	if tr.tools == nil {
		tr.tools = noTools{}
	}
	tr.log = tr.log.With("runId", t.Run.RunID, "userId", t.Run.UserID, "installId", t.Run.InstallID)
	if t.Run.TraceID != "" {
		tr.log = tr.log.With("traceId", t.Run.TraceID)
	}
	// The wall clock runs from the run's recorded start (its claim), so
	// time the caller spent before calling Run counts; a missing start, or
	// one ahead of our clock, falls back to now.
	start := tr.now()
	if s := t.Run.StartedAt; s != nil && !s.IsZero() && s.Before(start) {
		start = *s
	}
	if t.Resume != nil {
		// The working time of the earlier attempts counts, not the wait.
		start = tr.now().Add(-t.Resume.Worked)
	}
	limits := l.cfg.Limits
	if r := t.Run.ReservedMicros; r > 0 {
		// The reservation is at most the turn's bound; it is the bound.
		limits.MaxCost = min(limits.MaxCost, r)
	}
	tr.callMaxOut = tr.maxOut
	tr.budget = newBudget(limits, start)
	return tr
}

// capped says whether the turn runs on a reservation under a spend cap
// (Run.ReservedMicros; zero: none).
func (tr *turn) capped() bool { return tr.run.ReservedMicros > 0 }

// loop alternates model calls and their tool calls until the model
// answers without tools or a bound, failure or cancellation ends the turn.
// A resumed turn goes on from its journal: the final post, the answer's
// remaining tool calls, or the next model call.
func (tr *turn) loop(ctx context.Context) TurnResult {
	tr.ctx = ctx
	tr.run.Model = tr.model
	tr.run.Cost.PriceVersion = tr.l.Pricer.Version()
	tr.specs = tr.tools.Specs()
	tr.specBytes = specBytes(tr.specs)
	var p resumePoint
	if tr.t.Resume != nil {
		var err error
		if p, err = tr.restore(tr.t.Resume); err != nil {
			tr.log.Error("the journal cannot be read; the turn cannot go on", "error", err)
			return tr.finish(&Error{Kind: runs.ErrUnknown, Message: msgInternal, Err: err, Infrastructure: true})
		}
		if out, ok := tr.resumed(ctx, p); !ok {
			return out
		}
	} else {
		tr.messages = opening(tr.t.System, tr.t.Message)
	}
	switch {
	case p.final != nil:
		return tr.deliver(ctx, p.final.Content)
	case len(p.calls) > 0:
		if e := tr.runTools(ctx, p.step, p.calls); e != nil {
			return tr.finish(e)
		}
	}

	for {
		if e := tr.beforeModel(ctx); e != nil {
			return tr.finish(e)
		}
		if len(tr.run.Steps) > 0 {
			if e := tr.checkpoint(ctx); e != nil {
				return tr.finish(e)
			}
		}
		resp, e := tr.tracedModelCall(ctx)
		if e != nil {
			return tr.finish(e)
		}
		msg := resp.Message
		if len(msg.ToolCalls) == 0 {
			return tr.answer(ctx, msg.Content, resp.FinishReason)
		}
		// Echoed back as received (ids, arguments, reasoning): the API
		// rejects a history that differs from what it produced.
		if msg.Role == "" {
			msg.Role = llm.RoleAssistant
		}
		tr.messages = append(tr.messages, msg)
		step := len(tr.run.Steps) - 1
		tr.journal(entry{Kind: entryAnswer, Step: step, Message: toJournal(msg)})
		if e := tr.runTools(ctx, step, msg.ToolCalls); e != nil {
			return tr.finish(e)
		}
	}
}

// runTools runs an answer's tool calls in order; an error ends the turn.
func (tr *turn) runTools(ctx context.Context, step int, calls []llm.ToolCall) *Error {
	for _, call := range calls {
		if e := tr.tracedToolCall(ctx, step, call); e != nil {
			return e
		}
	}
	return nil
}

// checkpoint saves progress before a model call or a billed or outward
// tool call, with the journal's waiting entries: that call is then the
// only thing a stopped attempt can leave unrecorded, and the estimate of
// a lost attempt covers it. The turn never runs ahead of its record: a
// checkpoint that cannot be written (after the SDK's retries) leaves the
// run for another attempt, which resumes it once the store answers; one
// refused because another attempt holds the run stops the turn (the
// worker has cancelled its context too).
func (tr *turn) checkpoint(ctx context.Context) *Error {
	err := tr.sync(ctx)
	switch {
	case err == nil:
		return nil
	case ctx.Err() != nil:
		return interrupted(context.Cause(ctx))
	}
	tr.log.Warn("checkpoint failed; leaving the run for another attempt", "step", len(tr.run.Steps)-1, "error", err)
	return &Error{Kind: runs.ErrInterrupted, Message: msgInterrupted, Err: errLeave}
}

// sync writes the run with every journal entry appended so far.
func (tr *turn) sync(ctx context.Context) error {
	if tr.t.Checkpoint == nil {
		return nil
	}
	cctx, cancel := context.WithTimeout(ctx, max(tr.budget.remaining(tr.now()), tr.budget.limits.PostGrace))
	defer cancel()
	if err := tr.t.Checkpoint(cctx, tr.run); err != nil {
		return err
	}
	tr.pending = false
	return nil
}

// noTools is the toolset of a turn offered none.
type noTools struct{}

func (noTools) Specs() []llm.ToolSpec            { return nil }
func (noTools) Lookup(string) (tools.Tool, bool) { return nil, false }
