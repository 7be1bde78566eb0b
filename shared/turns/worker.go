package turns

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/commonly/runtime/shared/metrics"
	"github.com/commonly/runtime/shared/runs"
)

// Engine runs a claimed turn. It fills the run (steps, tokens, cost,
// final message) and leaves it in a final status; the worker writes it.
type Engine interface {
	Run(ctx context.Context, t EngineTurn) EngineResult
}

// EngineTurn is what an engine gets.
type EngineTurn struct {
	Install *Install
	Run     *runs.Run
	// Checkpoint saves progress of a running run (after each model step),
	// with the journal's waiting entries: done, they are durable. An
	// error wrapping ErrLeaseLost means another attempt holds the run:
	// the engine stops at once (its context is cancelled too).
	Checkpoint func(ctx context.Context, r *runs.Run) error
	// Events receives what happens in the turn, for the run's event
	// stream (events.go); never nil from the worker.
	Events runs.Recorder
	// Journal keeps what a takeover needs to go on (journal.go); never
	// nil from the worker.
	Journal Journal
	// Resumed is set when this attempt took the run over from one that
	// stopped: the journal it left and what it was. The engine prices
	// the lost attempt onto the run and checkpoints it before anything it
	// does is billed; an engine that cannot resume ends the run.
	Resumed *Resumption
}

// EngineResult is what the worker needs back from an engine beyond the run.
type EngineResult struct {
	// Infrastructure says the turn failed for an infrastructure reason,
	// ours or a provider's (an outage, our configuration), not the
	// user's input, the model's answer or a bound. The engine says what
	// failed; whether the turn is refunded is decided once, by the
	// worker, with runs.RefundDue (only if no model call answered).
	Infrastructure bool
	// Leave: the engine stopped without ending the run (its invocation
	// is ending with the turn's bounds left, ErrAttemptEnding, or its
	// record could not be written): the worker writes its progress and
	// releases its lease, for another attempt to resume it.
	Leave bool
}

// WorkerConfig configures a Worker. Zero values are the documented
// defaults; NewWorker refuses what the worker cannot run with.
type WorkerConfig struct {
	// Store is required.
	Store Store
	// Engines are this deployment's engines by name. An engine missing
	// here fails its turns with errorKind config instead of running them
	// elsewhere: nothing falls back silently to another engine.
	Engines map[EngineName]Engine
	// Metrics receives one EMF event per finished turn; nil discards.
	Metrics *metrics.Emitter
	// Installs is the container's install cache, shared with the service;
	// nil reads the install on every turn.
	Installs *InstallCache
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// Log gets one line per turn; nil means slog.Default().
	Log *slog.Logger
	// Events writes a run's events between its own writes (events.go);
	// nil lets them ride only on the checkpoints and the final write.
	Events EventWriter
	// Handoff dispatches a run whose turn stopped because its invocation
	// was ending (ErrAttemptEnding) to a new invocation at once, once its
	// lease is released: the turn goes on in well under a second rather
	// than at Lambda's retry of the failed dispatch (a minute) or the
	// reaper's next sweep. Nil leaves it to those (an inline dispatch
	// has no invocation of its own to hand over to).
	Handoff Dispatcher
}

// Worker claims dispatched runs and drives them to a final status.
type Worker struct {
	cfg      WorkerConfig
	store    Store
	engines  map[EngineName]Engine
	installs *InstallCache
	now      func() time.Time
	log      *slog.Logger
	// unwritten holds the final runs this container computed but could
	// not write (pending.go), for a retried dispatch of the same run.
	unwritten boundedMap[pendingFinal]
}

// NewWorker checks cfg and fills its defaults.
func NewWorker(cfg WorkerConfig) (*Worker, error) {
	var errs []error
	if cfg.Store == nil {
		errs = append(errs, errors.New("turns: the worker needs a store"))
	}
	for name, e := range cfg.Engines {
		if _, err := ParseEngine(string(name)); err != nil {
			errs = append(errs, fmt.Errorf("turns: engines: %w", err))
		} else if e == nil {
			errs = append(errs, fmt.Errorf("turns: engine %s is nil", name))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	if cfg.Installs == nil {
		cfg.Installs = uncached(cfg.Store)
	}
	return &Worker{cfg: cfg, store: traced(cfg.Store), engines: cfg.Engines, installs: cfg.Installs, now: cfg.Now, log: cfg.Log}, nil
}

// execute claims the run and runs it: its first claim, or a takeover of
// a run whose worker stopped (its lease lapsed), which resumes it from
// its journal. A run that is not claimable is not run: if this container
// ran it and could not write its final state, that state is written now;
// one held by a live lease fails the dispatch (ErrLeaseHeld), so that
// Lambda tries it again later; one abandoned (deadline.go) is closed
// interrupted, as the reaper would. It returns the run's latest state,
// and an error wrapping ErrFinalWrite when the turn ran but its final
// write failed (the dispatch must fail, so that Lambda retries it).
func (w *Worker) execute(ctx context.Context, runID string) (*runs.Run, error) {
	if p, ok := w.unwritten.get(runID); ok {
		return w.writeUnwritten(ctx, runID, p)
	}
	run, err := w.store.ClaimRun(ctx, runID, w.now().UTC())
	if errors.Is(err, ErrNotClaimable) {
		now := w.now()
		switch {
		case run != nil && leased(run) && !run.Lease.Lapsed(now):
			w.log.InfoContext(ctx, "run held by a live worker; the dispatch fails for a later retry", "runId", runID, "attempt", run.Attempts)
			return run, fmt.Errorf("run %s: %w", runID, ErrLeaseHeld)
		case run == nil || !abandoned(run, now):
			// Final, or still someone's: the next dispatch's.
			w.log.InfoContext(ctx, "run not claimable", "runId", runID, "status", statusOf(run))
			return run, nil
		}
		return w.closeAbandoned(ctx, run)
	}
	if err != nil {
		return nil, fmt.Errorf("claim run %s: %w", runID, err)
	}
	var resumed *Resumption
	if run.Attempts > 1 {
		if resumed, err = w.resumption(ctx, run); err != nil {
			// Held, not run: the lease lapses and the next dispatch tries.
			return nil, fmt.Errorf("resume run %s: %w", runID, err)
		}
		w.cfg.Metrics.Emit(map[string]string{"Engine": run.Engine}, metrics.Metric{Name: MetricResumptions, Unit: metrics.Count, Value: 1})
	}
	return w.run(ctx, run, resumed)
}

// resumption reads what a taken-over run's stopped attempt left: its
// journal and its sandboxes.
func (w *Worker) resumption(ctx context.Context, run *runs.Run) (*Resumption, error) {
	entries, err := w.store.ReadJournal(ctx, run.RunID)
	if err != nil {
		return nil, err
	}
	sandboxes, err := w.store.RunSandboxes(ctx, run.RunID)
	if err != nil {
		return nil, err
	}
	lastWrite := time.UnixMilli(run.Lease.PrevUntilMs - LeaseDuration.Milliseconds()).UTC()
	return &Resumption{Entries: entries, Sandboxes: sandboxes, Lost: runs.LostAttempt{
		Attempt: run.Lease.WrittenBy, LastWriteAt: lastWrite, ResumedAt: w.now().UTC(), Estimated: true,
	}}, nil
}

// closeAbandoned closes an abandoned run as the reaper does
// (Reclaimer.Interrupt) and returns the run's latest state.
func (w *Worker) closeAbandoned(ctx context.Context, run *runs.Run) (*runs.Run, error) {
	refund := endAbandoned(run, w.now())
	err := w.write(ctx, run, refund)
	switch {
	case err == nil:
		w.log.InfoContext(ctx, "abandoned run interrupted", "runId", run.RunID, "userId", run.UserID, "refunded", refund)
		return run, nil
	case errors.Is(err, ErrAlreadyFinal):
		// The reaper or another dispatch closed it first.
		cur, gerr := w.store.GetRun(ctx, run.RunID)
		if gerr != nil {
			return nil, fmt.Errorf("read run %s: %w", run.RunID, gerr)
		}
		return cur, nil
	}
	// Left open, for Lambda's retry of this dispatch or the reaper.
	return nil, fmt.Errorf("close abandoned run %s: %w", run.RunID, err)
}

func statusOf(r *runs.Run) runs.Status {
	if r == nil {
		return ""
	}
	return r.Status
}

func (w *Worker) run(ctx context.Context, run *runs.Run, resumed *Resumption) (final *runs.Run, err error) {
	log := w.log.With("runId", run.RunID, "userId", run.UserID, "engine", run.Engine, "attempt", run.Attempts)
	outcome := EngineResult{}
	// A write refused for a newer attempt cancels the turn: the attempt
	// stops at once and writes nothing more.
	ctx, stop := context.WithCancelCause(ctx)
	defer stop(nil)
	// With attempts left, the turn stops a little before its invocation
	// ends, to leave the run for another attempt rather than lose it.
	if d, ok := ctx.Deadline(); ok && run.Attempts < run.MaxAttempts {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadlineCause(ctx, d.Add(-leaveMargin), ErrAttemptEnding)
		defer cancel()
	}
	journal := 0
	if resumed != nil {
		journal = len(resumed.Entries)
	}
	ev := newRunWriter(ctx, run, journal, w.cfg.Events, w.store.CheckpointRun, w.store.LookRun, w.now, log, stop)
	defer func() {
		// Every path ends here: a panic in an engine, a cancelled context,
		// an engine that forgot to finish. The run leaves with a final
		// status, unless another attempt took it over.
		if p := recover(); p != nil {
			log.ErrorContext(ctx, "turn panicked", "panic", fmt.Sprint(p))
			run.End(runs.StatusFailed, runs.ErrUnknown, "internal error", w.now())
		}
		if lost := context.Cause(ctx); errors.Is(lost, ErrLeaseLost) || errors.Is(lost, ErrAlreadyFinal) {
			ev.stop()
			log.WarnContext(ctx, "attempt stopped: the run is another's", "err", lost)
			final, err = nil, nil
			return
		}
		cancelled := errors.Is(context.Cause(ctx), ErrCancelled)
		if outcome.Leave && !run.Status.Final() && !cancelled {
			final, err = run, w.leave(ctx, run, ev, errors.Is(context.Cause(ctx), ErrAttemptEnding), log)
			return
		}
		if cancelled && (run.Status != runs.StatusSucceeded || (!run.PostedToPod && run.FinalMessage != "")) {
			// The owner's stop, not a failure: what was spent is charged,
			// and the turn counts (cancel.go). A stop that came between
			// the answer and its record (the flush during the post) and
			// cut the post is a stop too; one after the post is too late.
			run.End(runs.StatusCancelled, "", "the turn was cancelled", w.now())
			outcome.Infrastructure = false
		}
		if !run.Status.Final() {
			if ctx.Err() != nil {
				run.End(runs.StatusInterrupted, runs.ErrInterrupted, "the turn was interrupted", w.now())
			} else {
				run.End(runs.StatusFailed, runs.ErrUnknown, "the turn ended without a result", w.now())
			}
		}
		ev.close(run)
		final, err = run, w.finalWrite(ctx, run, run.RefundDue(outcome.Infrastructure))
	}()

	inst, err := w.installs.get(ctx, run.InstallID)
	if resumed == nil {
		started := runs.RunStarted{Engine: run.Engine}
		if inst != nil {
			started.Model = inst.Model
		}
		ev.Record(started)
	}
	if err != nil {
		log.ErrorContext(ctx, "install unavailable", "err", err)
		run.End(runs.StatusFailed, runs.ErrConfig, "the install could not be read", w.now())
		outcome.Infrastructure = true
		return
	}
	engine, ok := w.engines[EngineName(run.Engine)]
	if !ok {
		run.End(runs.StatusFailed, runs.ErrConfig, fmt.Sprintf("engine %q is not configured in this deployment", run.Engine), w.now())
		outcome.Infrastructure = true
		return
	}
	outcome = engine.Run(ctx, EngineTurn{Install: inst, Run: run, Checkpoint: ev.checkpoint, Events: ev, Journal: ev, Resumed: resumed})
	log.InfoContext(ctx, "turn finished", "status", run.Status, "errorKind", run.ErrorKind, "costMicros", int64(run.CostMicros), "steps", len(run.Steps))
	return
}

// leaveMargin is how long before its invocation's end a turn with
// attempts left stops, to write its progress and release its lease.
const leaveMargin = 5 * time.Second

// leave writes a run the engine stopped without ending (its progress, the
// journal's waiting entries) and releases its lease, so that the next
// dispatch takes it over at once. A turn whose invocation was ending
// (ending) is handed to a new invocation (WorkerConfig.Handoff) and the
// dispatch succeeds; otherwise, or when the handoff fails, it returns the
// error that fails the dispatch, for Lambda's retry or the reaper's. A
// leave for another reason (a record that could not be written) is not
// handed off: a retry a minute later is what a faltering table needs.
func (w *Worker) leave(ctx context.Context, run *runs.Run, ev *runWriter, ending bool, log *slog.Logger) error {
	wctx, cancel := finalContext(ctx)
	defer cancel()
	released := ev.release(wctx, run)
	if released != nil {
		log.WarnContext(ctx, "the left run's progress could not be written; its lease lapses on its own", "err", released)
	}
	log.InfoContext(ctx, "run left for another attempt", "steps", len(run.Steps), "costMicros", int64(run.CostMicros))
	w.cfg.Metrics.Emit(map[string]string{"Engine": run.Engine}, metrics.Metric{Name: MetricTurnsLeft, Unit: metrics.Count, Value: 1})
	if ending && released == nil && w.cfg.Handoff != nil {
		// A lease still held (the release failed) would only fail the
		// new invocation's claim.
		_, err := w.cfg.Handoff.Dispatch(wctx, run)
		if err == nil {
			log.InfoContext(ctx, "run handed to a new invocation")
			return nil
		}
		log.WarnContext(ctx, "the run could not be handed to a new invocation; the failed dispatch is retried", "err", err)
	}
	return fmt.Errorf("run %s: %w", run.RunID, ErrLeftForResume)
}

// write is the final write of a run (FinishRun, conditional on the run
// being open), with its metrics once it is written.
func (w *Worker) write(ctx context.Context, run *runs.Run, refund bool) error {
	ctx, cancel := finalContext(ctx)
	defer cancel()
	run.Refunded = refund
	if err := w.store.FinishRun(ctx, run, refund); err != nil {
		w.log.ErrorContext(ctx, "could not write final run", "runId", run.RunID, "err", err)
		return err
	}
	w.emit(run, refund)
	return nil
}

// emit records a finished turn. Dimensions are the engine and the status
// only (few values), and for a turn that did not succeed its error kind
// (a closed set); ids go to logs, never to metrics.
func (w *Worker) emit(run *runs.Run, refund bool) {
	var duration float64
	if run.StartedAt != nil && run.CompletedAt != nil {
		duration = float64(run.CompletedAt.Sub(*run.StartedAt).Milliseconds())
	}
	refunds := 0.0
	if refund {
		refunds = 1
	}
	w.cfg.Metrics.Emit(map[string]string{"Engine": run.Engine, "Status": string(run.Status)},
		metrics.Metric{Name: MetricTurns, Unit: metrics.Count, Value: 1},
		metrics.Metric{Name: "TurnDuration", Unit: metrics.Milliseconds, Value: duration},
		metrics.Metric{Name: MetricTurnCost, Unit: metrics.None, Value: float64(run.CostMicros)},
		metrics.Metric{Name: "ModelCalls", Unit: metrics.Count, Value: float64(len(run.Steps))},
		metrics.Metric{Name: "TurnsRefunded", Unit: metrics.Count, Value: refunds},
	)
	if lost := run.Cost.LostMicros; lost > 0 {
		w.cfg.Metrics.Emit(map[string]string{"Engine": run.Engine},
			metrics.Metric{Name: MetricLostAttemptCost, Unit: metrics.None, Value: float64(lost)})
	}
	if run.ErrorKind != "" {
		w.cfg.Metrics.Emit(map[string]string{"ErrorKind": string(run.ErrorKind)},
			metrics.Metric{Name: MetricTurnsFailed, Unit: metrics.Count, Value: 1})
	}
}

// InlineDispatcher runs the turn inside the request (local stack, tests).
type InlineDispatcher struct{ Worker *Worker }

// Dispatch runs the turn to its end and returns the final run.
func (d InlineDispatcher) Dispatch(ctx context.Context, run *runs.Run) (*runs.Run, error) {
	return d.Worker.Execute(ctx, run.RunID)
}
