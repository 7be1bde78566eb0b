package turns

import (
	"time"

	"github.com/commonly/runtime/shared/runs"
)

// How long a run may legitimately stay open, and who may act on it when.
// One notion, used by the store's claim, the worker's retried dispatch and
// the reaper (Reclaimer), so that none of them closes a run another may
// still be working on.
//
// A running run is held by a lease (runs.Lease): each of its worker's
// writes renews it for LeaseDuration, and a worker with nothing to write
// renews it alone after HeartbeatAfter of silence. A lapsed lease means
// the worker stopped; the next dispatch (Lambda's retry of the failed
// one, or the reaper's re-dispatch) takes the run over and resumes it,
// up to the run's MaxAttempts and within RunMaxLife of its admission.
// Past those, or for a run that cannot be resumed, whoever finds the
// lease lapsed closes the run interrupted.
const (
	// MaxTurnDuration is the longest one attempt runs: the turn
	// function's timeout (infra/cdk), which holds every engine's own
	// bound (the loop's 170 s of working time and 5 s to post, the
	// Durable Object's DO_RUNTIME_TIMEOUT of at most 175 s) and the
	// final write. Past it Lambda has stopped the worker.
	MaxTurnDuration = 180 * time.Second
	// ClaimWindow is how long after its admission a queued run may still
	// be claimed (Store.ClaimRun refuses it after): a dispatch delayed
	// longer (Lambda's asynchronous queue under throttling) is of no use
	// to its user. Lambda's first retry, a minute after a failed
	// attempt, still claims.
	ClaimWindow = 90 * time.Second
	// LeaseDuration is how long a worker's hold on its run lasts after
	// each write. Short, so that a stopped worker's turn comes back soon;
	// three heartbeats long, so that a slow write or two does not lose a
	// live worker its run (and if one does, the worker's next write is
	// refused and it stops: only time is lost, never a step).
	LeaseDuration = 15 * time.Second
	// HeartbeatAfter is how long a worker may write nothing (a model call
	// that has not started streaming, a code run) before it renews its
	// lease alone.
	HeartbeatAfter = 5 * time.Second
	// DefaultMaxAttempts is how many workers may hold a native run in all
	// (TURN_MAX_ATTEMPTS): the first and two takeovers, as many as
	// Lambda's two retries of a failed asynchronous invocation.
	DefaultMaxAttempts = 3
	// RedispatchHold is how long the reaper waits after re-dispatching a
	// run before it may re-dispatch it again (the invocation it queued
	// may still be on its way).
	RedispatchHold = 2 * time.Minute
	// reclaimGrace covers the clocks of two containers (the worker that
	// claimed, the reaper that reads its claim) and the final write's
	// own time.
	reclaimGrace = 30 * time.Second
	// RunMaxLife bounds how long any run may stay open after its
	// admission: every attempt at its longest, with Lambda's retry waits
	// and the reaper's re-dispatch between them. A run still open past
	// it is closed interrupted, whatever its attempts.
	RunMaxLife = ClaimWindow + DefaultMaxAttempts*(MaxTurnDuration+LeaseDuration+RedispatchHold) + reclaimGrace
	// CheckAfter is the youngest open run the reaper reads: none younger
	// can have a lapsed lease or be past its claim window.
	CheckAfter = LeaseDuration
)

// openUntil is when a run without a live lease is given up if it is still
// open: a queued run ClaimWindow after its admission (no dispatch can
// claim it any more); a run claimed before leases existed MaxTurnDuration
// after its claim (its worker is gone by then); each plus the grace.
func openUntil(r *runs.Run) time.Time {
	switch {
	case r.Status == runs.StatusQueued:
		return r.CreatedAt.Add(ClaimWindow + reclaimGrace)
	case r.StartedAt != nil:
		return r.StartedAt.Add(MaxTurnDuration + reclaimGrace)
	}
	// Running without a claim time (never written so): the widest bound.
	return r.CreatedAt.Add(RunMaxLife)
}

// leased reports whether r is a running run held under a lease (claimed
// since leases exist).
func leased(r *runs.Run) bool { return r.Status == runs.StatusRunning && r.Lease.UntilMs > 0 }

// Resumable reports whether r's worker stopped and another may take it
// over: running under a lapsed lease, with attempts left, within its
// life.
func Resumable(r *runs.Run, now time.Time) bool {
	return leased(r) && r.Lease.Lapsed(now) && r.Attempts < r.MaxAttempts && now.Before(r.CreatedAt.Add(RunMaxLife)) &&
		r.CancelRequestedAt == nil
}

// abandoned reports whether r is open, held by nobody and past resuming
// at now: whoever closes it then (the reaper, a retried dispatch) cannot
// race a worker still running the turn, only another closer, and the
// conditional final write lets exactly one of them win.
func abandoned(r *runs.Run, now time.Time) bool {
	switch {
	case r.Status.Final():
		return false
	case leased(r):
		return r.Lease.Lapsed(now) && !Resumable(r, now)
	}
	return now.After(openUntil(r))
}
