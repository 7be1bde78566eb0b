package turns

import (
	"time"

	"github.com/commonly/runtime/shared/runs"
)

// How long a run may legitimately stay open. One notion, used by the
// store's claim, the worker's retried dispatch and the reaper
// (Reclaimer), so that none of them closes a run another may still be
// working on.
const (
	// MaxTurnDuration is the longest a worker runs a turn: the turn
	// function's timeout (infra/cdk), which holds every engine's own
	// bound (the loop's 170 s and 5 s to post, the Durable Object's
	// DO_RUNTIME_TIMEOUT of at most 175 s) and the final write. Past it
	// Lambda has stopped the worker, whatever it was doing.
	MaxTurnDuration = 180 * time.Second
	// ClaimWindow is how long after its admission a run may still be
	// claimed (Store.ClaimRun refuses it after): a dispatch delayed longer
	// (Lambda's asynchronous queue under throttling, a retry after
	// attempts that failed before claiming) is of no use to its user, and
	// bounding it bounds how long a run can stay open. Lambda's first
	// retry, a minute after a failed attempt, still claims.
	ClaimWindow = 90 * time.Second
	// reclaimGrace covers the clocks of two containers (the worker that
	// claimed, the reaper that reads its claim) and the final write's
	// own time.
	reclaimGrace = 30 * time.Second
	// InterruptAfter is how long after its admission (createdAt) any run
	// may still be open: claimed at the end of ClaimWindow, run for
	// MaxTurnDuration, plus the grace. A run still open past it was
	// abandoned by its worker (or never claimed) and is closed
	// interrupted by the reaper. Five minutes.
	InterruptAfter = ClaimWindow + MaxTurnDuration + reclaimGrace
)

// openUntil is when an open run is abandoned if it is still open: for a
// running run, MaxTurnDuration after its claim (its worker is gone by
// then); for a queued one, ClaimWindow after its admission (no dispatch
// can claim it any more); each plus the grace. Both come before
// InterruptAfter after admission, for every run claimed within the
// window.
func openUntil(r *runs.Run) time.Time {
	switch {
	case r.Status == runs.StatusQueued:
		return r.CreatedAt.Add(ClaimWindow + reclaimGrace)
	case r.StartedAt != nil:
		return r.StartedAt.Add(MaxTurnDuration + reclaimGrace)
	}
	// Running without a claim time (never written so): the widest bound.
	return r.CreatedAt.Add(InterruptAfter)
}

// abandoned reports whether r is open past openUntil at now: whoever
// closes it then (the reaper, a retried dispatch) cannot race a worker
// still running the turn, only another closer, and the conditional final
// write lets exactly one of them win.
func abandoned(r *runs.Run, now time.Time) bool {
	return !r.Status.Final() && now.After(openUntil(r))
}
