package turns

import (
	"context"
	"errors"
	"fmt"

	"github.com/commonly/runtime/shared/runs"
)

// A turn that ran but whose final write failed (FinishRun failing after
// the SDK's retries) must not be reported as done: its run would stay
// running and its cost uncounted. The dispatch fails instead, so that
// Lambda retries it, and the outcome already computed is kept in this
// container, so that the retry writes it rather than run the turn again
// (which it could not: the run is no longer queued).
//
// Limits: the record is the container's memory. A retry that lands on
// another container (or after this one was recycled) finds the run
// running and leaves it to whoever closes abandoned runs (the reaper,
// or a later dispatch once the run is past its time limit), which closes
// it interrupted with what its checkpoints recorded. Inline dispatch
// (the local stack) has no retry: the request answers 503 and the run is
// left the same way. At most maxCached unwritten runs are kept.
//
// The retry's write is the same conditional FinishRun as every other
// closer's: if the run was closed meanwhile, the kept outcome loses and
// is dropped.

// pendingFinal is a final run that could not be written, and its refund.
type pendingFinal struct {
	run    runs.Run
	refund bool
}

// finalWrite writes the run's final state; when that fails it keeps the
// state for a retried dispatch and returns an error wrapping
// ErrFinalWrite.
func (w *Worker) finalWrite(ctx context.Context, run *runs.Run, refund bool) error {
	err := w.write(ctx, run, refund)
	if err == nil || errors.Is(err, ErrAlreadyFinal) {
		// Already final: another closer won the condition; nothing to keep.
		return nil
	}
	w.unwritten.put(run.RunID, pendingFinal{run: *run, refund: refund})
	return fmt.Errorf("run %s: %w: %w", run.RunID, ErrFinalWrite, err)
}

// writeUnwritten writes a final run this container kept. It returns the
// run's latest state: the kept one once written, the stored one if
// another closer won.
func (w *Worker) writeUnwritten(ctx context.Context, runID string, p pendingFinal) (*runs.Run, error) {
	run := p.run
	err := w.write(ctx, &run, p.refund)
	switch {
	case err == nil:
		w.unwritten.delete(runID)
		w.log.InfoContext(ctx, "kept final run written on a retried dispatch", "runId", runID, "status", run.Status)
		return &run, nil
	case errors.Is(err, ErrAlreadyFinal):
		w.unwritten.delete(runID)
		w.log.WarnContext(ctx, "kept final run dropped: the run was closed meanwhile", "runId", runID)
		cur, gerr := w.store.GetRun(ctx, runID)
		if gerr != nil {
			return nil, fmt.Errorf("read run %s: %w", runID, gerr)
		}
		return cur, nil
	}
	return nil, fmt.Errorf("run %s: %w: %w", runID, ErrFinalWrite, err)
}
