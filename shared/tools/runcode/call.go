package runcode

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/commonly/runtime/shared/runs"
	"github.com/commonly/runtime/shared/sandbox"
	"github.com/commonly/runtime/shared/textcap"
	"github.com/commonly/runtime/shared/tools"
)

// Exit kinds recorded on runs.CodeRun.
const (
	ExitOK          = "ok"
	ExitError       = "error"
	ExitTimeout     = "timeout"
	ExitRejected    = "rejected"
	ExitSandboxLost = "sandbox_lost"
)

// killTimeout bounds killing a sandbox whose record could not be written;
// the call's own context may be nearly spent.
const killTimeout = 10 * time.Second

type arguments struct {
	Language string `json:"language"`
	Code     string `json:"code"`
}

// Call implements tools.Tool.
func (t *Tool) Call(ctx context.Context, env tools.Env, raw json.RawMessage) tools.Result {
	var args arguments
	if err := tools.DecodeArgs(raw, &args); err != nil {
		return tools.Result{Err: err}
	}
	lang := sandbox.Language(args.Language)
	chars := textcap.Len(args.Code)
	// rejected records a call that ran nothing on the step, as a rejected run.
	rejected := func(res tools.Result) tools.Result {
		res.CodeRun = &runs.CodeRun{Language: args.Language, CodeChars: chars, ExitKind: ExitRejected}
		return res
	}
	switch {
	case !lang.Valid():
		return rejected(tools.Errorf("%w: language must be %q or %q", tools.ErrBadArguments, sandbox.Python, sandbox.JavaScript))
	case strings.TrimSpace(args.Code) == "":
		return rejected(tools.Errorf("%w: code is empty", tools.ErrBadArguments))
	case chars > t.cfg.MaxCodeChars:
		return rejected(tools.Errorf("code is %d characters long; the limit is %d characters per run: send a shorter program",
			chars, t.cfg.MaxCodeChars))
	}

	t.callMu.Lock()
	defer t.callMu.Unlock()

	t.mu.Lock()
	switch {
	case t.lost != nil:
		t.mu.Unlock()
		return tools.Fail(runs.ErrSandbox, true, fmt.Errorf("runcode: sandbox lost earlier in the turn: %w", t.lost))
	case t.closed:
		t.mu.Unlock()
		return rejected(tools.Errorf("code execution has ended for this turn"))
	case t.runs >= t.cfg.MaxRuns:
		t.mu.Unlock()
		return rejected(tools.Errorf("run limit reached: at most %d code runs per turn; answer with what you have", t.cfg.MaxRuns))
	}
	t.runs++
	runsLeft := t.cfg.MaxRuns - t.runs
	t.mu.Unlock()

	s, res := t.ensureSession(ctx, env)
	if s == nil {
		return rejected(res)
	}
	// What the code prints streams to the run's events as it is printed.
	return t.execute(sandbox.WithOutput(ctx, tools.ProgressOf(ctx).Output), s, lang, args.Code, chars, runsLeft)
}

// ensureSession returns the turn's sandbox, creating and recording it on
// the first run. When it returns nil, the Result says why.
func (t *Tool) ensureSession(ctx context.Context, env tools.Env) (sandbox.Session, tools.Result) {
	t.mu.Lock()
	s := t.session
	t.mu.Unlock()
	if s != nil {
		return s, tools.Result{}
	}

	t.mu.Lock()
	life := t.lifeLeft
	t.mu.Unlock()
	if life <= 0 {
		return nil, tools.Errorf("the code sandbox's lifetime for this turn is spent; answer without running code")
	}
	meta := sandbox.Meta{
		RunID: env.RunID, UserID: env.UserID, InstallID: env.InstallID,
		Deadline: t.cfg.Now().Add(life),
	}
	if res, ok := t.holdSlot(ctx, env.RunID); !ok {
		return nil, res
	}
	s, err := t.cfg.Provider.Create(ctx, meta)
	if err != nil {
		t.releaseSlot(ctx) // nothing was made
	}
	switch {
	case err == nil:
	case errors.Is(err, sandbox.ErrUnavailable):
		return nil, unavailable()
	case ctx.Err() != nil:
		return nil, contextFailure(ctx, err)
	default:
		return nil, tools.Fail(runs.ErrSandbox, true, fmt.Errorf("runcode: create sandbox: %w", err))
	}

	// Created after the provider answered, so that ExpiresAt is never
	// before the provider's own expiry: the reaper must not kill early.
	rec := sandbox.NewRecord(t.cfg.Provider.Name(), s.ID(), meta, t.cfg.Now())
	if err := t.cfg.Ledger.SandboxCreated(ctx, rec); err != nil {
		// An unrecorded sandbox would escape the reaper: do not use it.
		t.killUnrecorded(ctx, s)
		return nil, tools.Errorf("the code sandbox could not be started, so the code was not run; try again or answer without running code")
	}

	t.mu.Lock()
	closed := t.closed
	if !closed {
		t.session, t.created = s, rec.CreatedAt
	}
	t.mu.Unlock()
	if closed {
		// The turn ended while we were creating: Close found nothing to
		// kill, so we do. If this fails, the record lets the reaper do it.
		kctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), killTimeout)
		defer cancel()
		_ = t.kill(kctx, s)
		return nil, tools.Errorf("code execution has ended for this turn")
	}
	if f := tools.ProgressOf(ctx).SandboxCreated; f != nil {
		f(s.ID())
	}
	return s, tools.Result{}
}

// holdSlot takes the turn's place under the deployment's cap on
// concurrent sandboxes, when there is one, until the sandbox's lifetime
// (and SlotGrace) ends. At the cap, or when the cap cannot be read, the
// model is told, as a tool error, and the turn goes on without code: the
// cap protects the provider's plan, it is no fault of the turn.
func (t *Tool) holdSlot(ctx context.Context, runID string) (tools.Result, bool) {
	if t.cfg.MaxSandboxes == 0 {
		return tools.Result{}, true
	}
	now := t.cfg.Now()
	slot, err := t.cfg.Slots.AcquireSlot(ctx, t.cfg.MaxSandboxes, runID, now, now.Add(sandbox.Lifetime+sandbox.SlotGrace))
	switch {
	case err == nil:
		t.mu.Lock()
		t.slot = &slot
		t.mu.Unlock()
		return tools.Result{}, true
	case errors.Is(err, sandbox.ErrAtCapacity):
		return atCapacity(t.cfg.MaxSandboxes), false
	case ctx.Err() != nil:
		return contextFailure(ctx, err), false
	default:
		return tools.Errorf("the code sandbox could not be started, so the code was not run; try again or answer without running code"), false
	}
}

// atCapacity is the model's answer when the deployment runs as many
// sandboxes as its cap allows.
func atCapacity(limit int) tools.Result {
	return tools.Errorf("code execution is at capacity: this service is running as many code sandboxes as it allows (%d) for all its users at once; the code was not run. Answer without running code, or try once more later in this turn", limit)
}

func (t *Tool) killUnrecorded(ctx context.Context, s sandbox.Session) {
	kctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), killTimeout)
	defer cancel()
	// If this fails too, the provider's own lifetime (180 s) kills it,
	// and the slot lapses after it.
	if s.Kill(kctx) == nil {
		t.releaseSlot(ctx)
	}
}

// execute runs code once and shapes the outcome for the model.
func (t *Tool) execute(ctx context.Context, s sandbox.Session, lang sandbox.Language, code string, chars, runsLeft int) tools.Result {
	runCtx, cancel := context.WithTimeout(ctx, t.cfg.RunTimeout)
	defer cancel()
	start := t.cfg.Now()
	exec, err := s.Execute(runCtx, lang, code)
	elapsed := max(t.cfg.Now().Sub(start), 0)

	rec := &runs.CodeRun{
		Language: string(lang), CodeChars: chars, DurationMs: elapsed.Milliseconds(), SandboxID: s.ID(),
	}
	var res tools.Result
	switch {
	case err == nil:
		rec.ExitKind = ExitOK
		if exec.Error != nil {
			rec.ExitKind = ExitError
		}
		out := t.shape(exec, runsLeft)
		t.mu.Lock()
		if t.restarted {
			out.Note, t.restarted = restartNote, false
		}
		t.mu.Unlock()
		res.Output = out
	case ctx.Err() != nil:
		// The turn itself was cancelled or ran out of time: not the run's doing.
		rec.ExitKind = ExitTimeout
		res = contextFailure(ctx, err)
	case errors.Is(err, sandbox.ErrTimeout):
		rec.ExitKind = ExitTimeout
		res.Err = t.timedOut(exec)
	case errors.Is(err, sandbox.ErrLost):
		rec.ExitKind = ExitSandboxLost
		t.mu.Lock()
		t.lost = err
		t.mu.Unlock()
		res = tools.Fail(runs.ErrSandbox, true, fmt.Errorf("runcode: sandbox %s lost mid-turn: %w", s.ID(), err))
	case errors.Is(err, sandbox.ErrUnavailable):
		rec.ExitKind = ExitRejected
		res = unavailable()
	default:
		rec.ExitKind = ExitSandboxLost
		res = tools.Fail(runs.ErrSandbox, true, fmt.Errorf("runcode: execute in sandbox %s: %w", s.ID(), err))
	}
	res.CodeRun = rec
	res.Usage.SandboxMillis = elapsed.Milliseconds()
	t.mu.Lock()
	t.ranMillis += res.Usage.SandboxMillis
	t.mu.Unlock()
	return res
}

func (t *Tool) timedOut(exec sandbox.Execution) error {
	msg := fmt.Sprintf("the code ran longer than the %v limit per run and was stopped; make it faster or do less per run", t.cfg.RunTimeout)
	if out := strings.TrimSpace(exec.Stdout); out != "" {
		msg += "\nstdout before it was stopped:\n" + clip(stripANSI(out), t.cfg.MaxOutputChars/4)
	}
	return errors.New(msg)
}

func unavailable() tools.Result {
	return tools.Errorf("code execution is unavailable right now; answer without running code")
}

// contextFailure ends the turn when its own context is done: the loop
// would stop anyway, and the run's outcome is unknown.
func contextFailure(ctx context.Context, err error) tools.Result {
	kind := runs.ErrInterrupted
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		kind = runs.ErrTimeout
	}
	return tools.Fail(kind, false, fmt.Errorf("runcode: %w", err))
}
