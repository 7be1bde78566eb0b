package turns

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/commonly/runtime/shared/money"
	"github.com/commonly/runtime/shared/runs"
	"github.com/commonly/runtime/shared/tracing"
)

// Every run reaches a final status, whatever happened to its worker: the
// reaper lists the runs still open CheckAfter after their admission
// (Abandoned) and reads each (Interrupt): one whose worker stopped with
// attempts left is re-dispatched, so that another attempt resumes it;
// one past resuming is closed with the same conditional final write as
// the worker, so that the reaper, a late worker and Lambda's retry of the
// dispatch can race and exactly one of them closes the run.

// ReclaimStore is the persistence the Reclaimer needs. *store.Dynamo
// implements it.
type ReclaimStore interface {
	// OpenRuns lists runs still open (queued or running) admitted before
	// before, oldest first, at most limit, from one shard (0 to
	// IndexShards-1) of the sparse index of open runs (no scan),
	// following its pages. With an error it returns the runs of the pages
	// read before it.
	OpenRuns(ctx context.Context, shard int, before time.Time, limit int) ([]OpenRun, error)
	// IndexShards is how many shards the index of open runs has.
	IndexShards() int
	GetRun(ctx context.Context, runID string) (*runs.Run, error)
	// FinishRun is Store.FinishRun: conditional on the run being open
	// (ErrAlreadyFinal otherwise), refunding in the same transaction.
	FinishRun(ctx context.Context, r *runs.Run, refund bool) error
	// RunSandboxes lists the run's sandboxes still recorded running.
	RunSandboxes(ctx context.Context, runID string) ([]SandboxRef, error)
	// MarkRedispatched records a re-dispatch of the run at now, only if
	// its lease is still the lapsed one read (untilMs) and it was not
	// re-dispatched within RedispatchHold; false when it was.
	MarkRedispatched(ctx context.Context, runID string, untilMs int64, now time.Time) (bool, error)
}

// ReclaimerConfig configures a Reclaimer. Zero values are the documented
// defaults; NewReclaimer refuses what it cannot run with.
type ReclaimerConfig struct {
	// Store is required.
	Store ReclaimStore
	// Dispatcher re-dispatches a run whose worker stopped with attempts
	// left (the turn function, invoked asynchronously); nil closes such a
	// run interrupted instead of resuming it.
	Dispatcher Dispatcher
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// Log gets one line per run closed; nil means slog.Default().
	Log *slog.Logger
}

// Reclaimer closes the runs whose worker is gone.
type Reclaimer struct {
	store    ReclaimStore
	dispatch Dispatcher
	now      func() time.Time
	log      *slog.Logger
}

// NewReclaimer checks cfg and fills its defaults.
func NewReclaimer(cfg ReclaimerConfig) (*Reclaimer, error) {
	if cfg.Store == nil {
		return nil, errors.New("turns: the reclaimer needs a store")
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	return &Reclaimer{store: cfg.Store, dispatch: cfg.Dispatcher, now: cfg.Now, log: cfg.Log}, nil
}

// OpenRun is a run on the index of open runs: its id and its admission.
type OpenRun struct {
	RunID string
	Since time.Time
}

// Shards is how many shards the index of open runs is spread over:
// Abandoned reads one at a time, the caller reads them all.
func (r *Reclaimer) Shards() int { return r.store.IndexShards() }

// Abandoned lists the runs of one shard (0 to Shards-1) still queued or
// running that were admitted before now-CheckAfter (none younger can be
// abandoned or have a lapsed lease), oldest first, at most limit (which
// must be positive). The index trails the table by a moment, so a run
// listed may have just closed, and most listed are still working:
// Interrupt reads each before acting. With an error it returns the runs
// listed before it, which the caller may still close.
func (r *Reclaimer) Abandoned(ctx context.Context, shard, limit int) ([]OpenRun, error) {
	if limit <= 0 {
		return nil, fmt.Errorf("turns: abandoned runs: limit %d is not positive", limit)
	}
	open, err := r.store.OpenRuns(ctx, shard, r.now().Add(-CheckAfter), limit)
	if err != nil {
		return open, fmt.Errorf("list abandoned runs of shard %d: %w", shard, err)
	}
	return open, nil
}

// SandboxRef names a sandbox of a run, with its creation (its bill runs
// from then until it is killed).
type SandboxRef struct {
	Provider, SandboxID string
	CreatedAt           time.Time
}

// Interruption is what Interrupt did.
type Interruption struct {
	// Closed is false when the run was already final (a late worker or
	// Lambda's retry closed it first) or is not abandoned yet: an
	// outcome, not an error. The other fields are set only when Closed.
	Closed bool
	// Redispatched: the run's worker stopped with attempts left, and the
	// run was dispatched again, for another attempt to resume it.
	Redispatched bool
	Refunded     bool
	CostMicros   money.Micros
	// Sandboxes are the run's sandboxes still recorded running, for the
	// caller to kill (and mark killed).
	Sandboxes []SandboxRef
}

// Interrupt closes the run interrupted (errorKind interrupted) if it is
// still open and abandoned: a running run MaxTurnDuration after its claim,
// a queued one ClaimWindow after its admission, each plus a grace (every
// run Abandoned lists is). Its cost is what its checkpoints recorded; the
// turn is refunded by runs.RefundDue (only if no model call answered).
// The write is the worker's conditional FinishRun, so exactly one closer
// wins; a lost race is Closed false.
func (r *Reclaimer) Interrupt(ctx context.Context, runID string) (Interruption, error) {
	run, err := r.store.GetRun(ctx, runID)
	if errors.Is(err, ErrNotFound) {
		// Gone (the table's TTL) since the index listed it.
		return Interruption{}, nil
	}
	if err != nil {
		return Interruption{}, fmt.Errorf("interrupt: %w", err)
	}
	now := r.now()
	resumable := Resumable(run, now)
	if resumable && r.dispatch != nil {
		return r.redispatch(ctx, run, now)
	}
	// Without a dispatcher a resumable run is closed: nothing else would.
	if !resumable && !abandoned(run, now) {
		return Interruption{}, nil
	}
	// Listed before the write, so that a failure leaves the run open for
	// the next sweep rather than closed with its sandboxes unknown.
	sandboxes, err := r.store.RunSandboxes(ctx, runID)
	if err != nil {
		return Interruption{}, fmt.Errorf("interrupt run %s: %w", runID, err)
	}
	was := run.Status
	refund := endAbandoned(run, now)
	ctx, cancel := finalContext(ctx)
	defer cancel()
	err = r.store.FinishRun(ctx, run, refund)
	if errors.Is(err, ErrAlreadyFinal) {
		r.log.InfoContext(ctx, "abandoned run closed by another writer first", "runId", runID, "userId", run.UserID)
		return Interruption{}, nil
	}
	if err != nil {
		return Interruption{}, fmt.Errorf("interrupt run %s: %w", runID, err)
	}
	tracing.LinkRun(ctx, run)
	r.log.InfoContext(ctx, "abandoned run interrupted", "runId", runID, "userId", run.UserID, "engine", run.Engine,
		"was", was, "createdAt", run.CreatedAt, "steps", len(run.Steps), "costMicros", int64(run.CostMicros),
		"refunded", refund, "sandboxes", len(sandboxes))
	return Interruption{Closed: true, Refunded: refund, CostMicros: run.CostMicros, Sandboxes: sandboxes}, nil
}

// redispatch dispatches a run whose worker stopped again, once per
// RedispatchHold: the attempt it starts takes the run over (ClaimRun).
func (r *Reclaimer) redispatch(ctx context.Context, run *runs.Run, now time.Time) (Interruption, error) {
	marked, err := r.store.MarkRedispatched(ctx, run.RunID, run.Lease.UntilMs, now)
	if err != nil || !marked {
		return Interruption{}, err
	}
	if _, err := r.dispatch.Dispatch(ctx, run); err != nil {
		// Marked but not sent: the next sweep past the hold tries again.
		return Interruption{}, fmt.Errorf("re-dispatch run %s: %w", run.RunID, err)
	}
	r.log.InfoContext(ctx, "stopped worker's run re-dispatched", "runId", run.RunID, "userId", run.UserID,
		"attempt", run.Attempts, "leaseLapsedAt", run.Lease.Until())
	return Interruption{Redispatched: true}, nil
}

// endAbandoned ends an abandoned run interrupted, as recorded by its last
// checkpoint, and says whether the turn is refunded. It is the one
// closing of an abandoned run, for the reaper and a retried dispatch.
func endAbandoned(run *runs.Run, now time.Time) (refund bool) {
	msg := "the turn's worker stopped before the turn ended"
	if run.Status == runs.StatusQueued {
		msg = "the turn was not started in time"
	} else {
		// Under a spend cap the day is charged the whole reservation, not
		// the checkpointed cost: the worker may have made calls after its
		// last checkpoint (a call answered, then the worker died), which
		// only the provider's bill will show, and each was bounded by the
		// reservation. A queued run was never claimed and can no longer
		// be (ClaimWindow): it spent nothing, and settles at its cost.
		run.CapChargedMicros = run.ReservedMicros
	}
	// The cost is the checkpointed parts' (steps, estimated ones
	// included, sandbox time, searches): AddCost is the one place the
	// total is computed.
	run.AddCost(runs.Cost{})
	if run.CancelRequestedAt != nil {
		// Its owner asked to stop it, and its worker stopped first: the
		// stop is the owner's, charged what it spent (cancel.go).
		run.End(runs.StatusCancelled, "", "the turn was cancelled", now)
		run.Refunded = false
		return false
	}
	run.End(runs.StatusInterrupted, runs.ErrInterrupted, msg, now)
	// An abandoned run is an infrastructure failure, ours: refunded
	// unless a model call answered.
	run.Refunded = run.RefundDue(true)
	return run.Refunded
}
