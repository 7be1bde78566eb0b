package turns_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/commonly/runtime/shared/runs"
	"github.com/commonly/runtime/shared/turns"
)

// handoffs records the runs handed to a new invocation, or refuses them.
type handoffs struct {
	mu     sync.Mutex
	ids    []string
	refuse error
}

func (h *handoffs) Dispatch(_ context.Context, run *runs.Run) (*runs.Run, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.refuse != nil {
		return nil, h.refuse
	}
	h.ids = append(h.ids, run.RunID)
	return nil, nil
}

// leaving is an engine whose first attempt runs until its context ends
// and leaves the run when the invocation is ending (the native engine's
// rule), or at once when leaveNow; a later attempt finishes the turn.
type leaving struct {
	mu       sync.Mutex
	attempts int
	leaveNow bool
}

func (e *leaving) Run(ctx context.Context, t turns.EngineTurn) turns.EngineResult {
	e.mu.Lock()
	e.attempts++
	first, now := e.attempts == 1, e.leaveNow
	e.mu.Unlock()
	if first {
		if now {
			return turns.EngineResult{Leave: true} // as when a checkpoint could not be written
		}
		<-ctx.Done()
		return turns.EngineResult{Leave: errors.Is(context.Cause(ctx), turns.ErrAttemptEnding)}
	}
	t.Run.FinalMessage = "done"
	t.Run.End(runs.StatusSucceeded, "", "", *t.Run.StartedAt)
	return turns.EngineResult{}
}

// A turn whose invocation is ending leaves its run and hands it to a new
// invocation at once: the dispatch succeeds (no retry of it), the lease
// is released, and the next attempt takes the run over without waiting
// for the lease to lapse. Without a handoff, when it is refused, or when
// the leave has another cause, the dispatch fails for Lambda's retry.
func TestATurnWhoseInvocationEndsIsHandedOver(t *testing.T) {
	refused := errors.New("invoke: throttled")
	for _, c := range []struct {
		name     string
		handoff  *handoffs
		leaveNow bool
		handed   bool
	}{
		{name: "handed over", handoff: &handoffs{}, handed: true},
		{name: "no handoff", handoff: nil},
		{name: "handoff refused", handoff: &handoffs{refuse: refused}},
		{name: "left for another cause", handoff: &handoffs{}, leaveNow: true},
	} {
		t.Run(c.name, func(t *testing.T) {
			eng := &leaving{leaveNow: c.leaveNow}
			o := rigOpts{engines: map[turns.EngineName]turns.Engine{turns.Native: eng}}
			if c.handoff != nil {
				o.handoff = c.handoff
			}
			r, id := queued(t, o)
			// The invocation's deadline: the turn stops leaveMargin (5 s)
			// before it.
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second+50*time.Millisecond)
			defer cancel()
			run, err := r.worker.Execute(ctx, id)
			if c.handed {
				if err != nil || run == nil || run.Status != runs.StatusRunning {
					t.Fatalf("the attempt that handed over: %+v, %v", run, err)
				}
				if len(c.handoff.ids) != 1 || c.handoff.ids[0] != id {
					t.Fatalf("handed over %v, want [%s]", c.handoff.ids, id)
				}
			} else {
				if !errors.Is(err, turns.ErrLeftForResume) {
					t.Fatalf("the attempt that left: %v, want ErrLeftForResume", err)
				}
				if c.handoff != nil && len(c.handoff.ids) != 0 {
					t.Fatalf("handed over %v", c.handoff.ids)
				}
			}
			// The new invocation, at the same instant: the lease was
			// released, so it claims the run and finishes it.
			run, err = r.worker.Execute(context.Background(), id)
			if err != nil || run.Status != runs.StatusSucceeded || run.Attempts != 2 || run.FinalMessage != "done" {
				t.Fatalf("the next attempt: %+v, %v", run, err)
			}
		})
	}
}
