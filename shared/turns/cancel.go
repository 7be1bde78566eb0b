package turns

import (
	"context"
	"errors"
	"fmt"

	"github.com/commonly/runtime/shared/runs"
)

// A run's owner (or the service) may ask it to stop from any device:
// POST /v1/runs/{runId}/cancel. A queued run is closed cancelled at once;
// a running one is marked, and its worker learns of it from its next
// write (each is conditional on no stop being asked for) or, through a
// wait with nothing to write, from a look at the run at most once a
// second (events.go): it cuts the model's stream and any code run, prices
// what was spent, kills the sandbox, posts nothing and ends the run
// cancelled. Its answer recorded for the pod (finalMessage), it is too
// late. A cancel is the user's choice: a run cancelled once claimed counts
// against the day's ceiling and is charged what it spent; one cancelled
// while queued spent nothing and is given back.

// CancelOutcome says what a cancel did.
type CancelOutcome string

const (
	// CancelRequested: the run is running; its worker ends it cancelled.
	CancelRequested CancelOutcome = "requested"
	// CancelDone: the run was queued and is cancelled now.
	CancelDone CancelOutcome = "cancelled"
	// CancelAlreadyFinal: the run had ended (cancelled included).
	CancelAlreadyFinal CancelOutcome = "already_final"
	// CancelTooLate: the run's answer is on its way to the pod.
	CancelTooLate CancelOutcome = "too_late"
)

// Cancellation is a cancel's outcome with the run as it stands.
type Cancellation struct {
	Run     *runs.Run
	Outcome CancelOutcome
}

// Cancel asks the run to stop; a run the caller may not see is
// ErrNotFound, as GetRun says.
func (s *Service) Cancel(ctx context.Context, c Caller, runID string) (*Cancellation, error) {
	run, err := s.GetRun(ctx, c, runID)
	if err != nil {
		return nil, err
	}
	for range 2 {
		switch {
		case run.Status.Final():
			return &Cancellation{Run: run, Outcome: CancelAlreadyFinal}, nil
		case run.Status == runs.StatusQueued:
			closed, err := s.cancelQueued(ctx, run)
			if err == nil || !errors.Is(err, ErrLeaseLost) {
				return closed, err
			}
			// Claimed meanwhile: ask its worker.
		case run.FinalMessage != "":
			return &Cancellation{Run: run, Outcome: CancelTooLate}, nil
		}
		cur, err := s.store.RequestCancel(ctx, runID, s.now().UTC())
		if err == nil {
			s.log.InfoContext(ctx, "run cancel requested", "runId", runID, "userId", run.UserID, "by", c.ID)
			return &Cancellation{Run: cur, Outcome: CancelRequested}, nil
		}
		if !errors.Is(err, ErrNotCancellable) {
			return nil, wrapUnavailable("cancel run", err)
		}
		run = cur
	}
	return nil, fmt.Errorf("cancel run %s: %w", runID, ErrUnavailable)
}

// cancelQueued closes a queued run cancelled, given back to the day (it
// spent nothing), with the final write every closer uses: a claim that
// came first wins, and the cancel asks its worker instead.
func (s *Service) cancelQueued(ctx context.Context, run *runs.Run) (*Cancellation, error) {
	run.End(runs.StatusCancelled, "", "the turn was cancelled before it started", s.now())
	run.Refunded = true
	wctx, cancel := finalContext(ctx)
	defer cancel()
	err := s.store.FinishRun(wctx, run, true)
	switch {
	case err == nil:
		s.log.InfoContext(ctx, "queued run cancelled", "runId", run.RunID, "userId", run.UserID)
		return &Cancellation{Run: run, Outcome: CancelDone}, nil
	case errors.Is(err, ErrAlreadyFinal), errors.Is(err, ErrLeaseLost):
		cur, gerr := s.store.GetRun(ctx, run.RunID)
		if gerr != nil {
			return nil, wrapUnavailable("read run", gerr)
		}
		if cur.Status.Final() {
			return &Cancellation{Run: cur, Outcome: CancelAlreadyFinal}, nil
		}
		*run = *cur
		return nil, ErrLeaseLost
	}
	return nil, wrapUnavailable("cancel run", err)
}
