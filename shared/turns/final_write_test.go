package turns_test

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/commonly/runtime/shared/runs"
	"github.com/commonly/runtime/shared/turns"
)

// failingFinish fails the final write while fail > 0, as a store whose
// writes keep failing after the SDK's retries.
type failingFinish struct {
	turns.Store
	mu     sync.Mutex
	fail   int
	writes int
}

func (s *failingFinish) FinishRun(ctx context.Context, r *runs.Run, refund bool) error {
	s.mu.Lock()
	s.writes++
	failing := s.fail > 0
	if failing {
		s.fail--
	}
	s.mu.Unlock()
	if failing {
		return errors.New("finish run: RequestError: send request failed")
	}
	return s.Store.FinishRun(ctx, r, refund)
}

// Issue 9, item 4: a final write that fails fails the dispatch, so that
// Lambda retries it; the retry writes the outcome already computed and
// does not run the turn again.
func TestFailedFinalWriteFailsTheDispatchAndTheRetryWritesIt(t *testing.T) {
	st := &failingFinish{}
	r, id := queued(t, rigOpts{storeWrap: func(s turns.Store) turns.Store { st.Store = s; return st }})
	st.fail = 1
	run, err := r.worker.Execute(context.Background(), id)
	if err == nil || !errors.Is(err, turns.ErrFinalWrite) {
		t.Fatalf("a dispatch whose final write failed reports success: %+v, %v", run, err)
	}
	if stored, _ := r.st.GetRun(context.Background(), id); stored.Status != runs.StatusRunning {
		t.Fatalf("stored run %s before the retry", stored.Status)
	}
	// Lambda's retry, on the same container.
	run, err = r.worker.Execute(context.Background(), id)
	if err != nil || run.Status != runs.StatusSucceeded {
		t.Fatalf("retry: %+v, %v", run, err)
	}
	if r.native.count() != 1 {
		t.Errorf("the turn ran %d times", r.native.count())
	}
	stored, err := r.svc.GetRun(context.Background(), user, id)
	if err != nil || stored.Status != runs.StatusSucceeded || stored.FinalMessage != "answer to: hi" || stored.CostMicros != 42 {
		t.Fatalf("stored run = %+v, %v", stored, err)
	}
	if u := r.usage(t, user); u.TurnsUsed != 1 {
		t.Errorf("usage %+v: the turn must count once", u)
	}
	// A later retry finds the run final and changes nothing.
	if run, err := r.worker.Execute(context.Background(), id); err != nil || run.Status != runs.StatusSucceeded {
		t.Fatalf("third dispatch: %+v, %v", run, err)
	}
	if u := r.usage(t, user); u.TurnsUsed != 1 || r.native.count() != 1 {
		t.Errorf("usage %+v, ran %d times", u, r.native.count())
	}
}

// A retry that fails to write again fails again, and keeps the outcome
// for the next one.
func TestPendingFinalWriteSurvivesAFailedRetry(t *testing.T) {
	st := &failingFinish{}
	r, id := queued(t, rigOpts{storeWrap: func(s turns.Store) turns.Store { st.Store = s; return st }})
	st.fail = 2
	for i := range 2 {
		if _, err := r.worker.Execute(context.Background(), id); !errors.Is(err, turns.ErrFinalWrite) {
			t.Fatalf("dispatch %d: %v", i, err)
		}
	}
	if run, err := r.worker.Execute(context.Background(), id); err != nil || run.Status != runs.StatusSucceeded || r.native.count() != 1 {
		t.Fatalf("third dispatch: %+v, %v, ran %d times", run, err, r.native.count())
	}
}

// When the run was closed by someone else meanwhile (the reaper), the
// pending outcome is dropped: the conditional write lets one closer win.
func TestPendingFinalWriteLosesToAnotherCloser(t *testing.T) {
	st := &failingFinish{}
	r, id := queued(t, rigOpts{storeWrap: func(s turns.Store) turns.Store { st.Store = s; return st }})
	st.fail = 1
	if _, err := r.worker.Execute(context.Background(), id); !errors.Is(err, turns.ErrFinalWrite) {
		t.Fatal(err)
	}
	other, _ := r.st.GetRun(context.Background(), id)
	other.End(runs.StatusInterrupted, runs.ErrInterrupted, "closed by the reaper", r.clock.Now())
	if err := r.st.FinishRun(context.Background(), other, false); err != nil {
		t.Fatal(err)
	}
	run, err := r.worker.Execute(context.Background(), id)
	if err != nil || run.Status != runs.StatusInterrupted {
		t.Fatalf("retry after another closer: %+v, %v", run, err)
	}
	if u := r.usage(t, user); u.CostMicros != 0 {
		t.Errorf("usage %+v: the losing outcome was charged", u)
	}
}

// Inline dispatch (the local stack): the request answers 503 and the run
// is left running for the reaper, not closed as undispatched.
func TestInlineFinalWriteFailureIsUnavailable(t *testing.T) {
	st := &failingFinish{}
	r := newRig(t, rigOpts{storeWrap: func(s turns.Store) turns.Store { st.Store = s; return st }})
	r.install(t, "inst-1", "user-1", turns.InstallRequest{})
	st.fail = 1
	_, err := r.submit(user, "inst-1", "hi", "key-1")
	if !errors.Is(err, turns.ErrUnavailable) {
		t.Fatalf("submit = %v, want unavailable", err)
	}
	if st.writes != 1 {
		t.Errorf("%d final writes: an inline turn that ran is not closed as undispatched", st.writes)
	}
	if u := r.usage(t, user); u.TurnsUsed != 1 {
		t.Errorf("usage %+v: a turn that ran is not refunded", u)
	}
}
