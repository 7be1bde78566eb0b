package turns_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/commonly/runtime/shared/money"
	"github.com/commonly/runtime/shared/runs"
	"github.com/commonly/runtime/shared/turns"
)

// capOpts: a cap with room for several whole turn bounds.
var capOpts = rigOpts{spendCap: 10_000, turnBound: 3_000, minReservation: 500}

func (r *rig) day(t *testing.T) (reserved, committed int64) {
	t.Helper()
	u, err := r.st.Usage(context.Background(), "user-1", "2026-12-02")
	if err != nil {
		t.Fatal(err)
	}
	return u.ReservedMicros, u.CapCommittedMicros
}

// A turn the reaper closes after its worker vanished mid-turn is charged
// its whole reservation: calls after its last checkpoint are unknown,
// and each was bounded by the reservation. A queued run never claimed
// spent nothing and releases everything.
func TestReaperSettlesAbandonedRunsConservatively(t *testing.T) {
	r, rc := reaperRig(t, capOpts)
	ctx := context.Background()
	running := r.abandoned(t, []runs.Step{answered}, 0)
	queued := r.admitted(t)
	if running.ReservedMicros != 3_000 || queued.ReservedMicros != 3_000 {
		t.Fatalf("reservations %d, %d", running.ReservedMicros, queued.ReservedMicros)
	}
	if res, com := r.day(t); res != 6_000 || com != 0 {
		t.Fatalf("before: reserved %d committed %d", res, com)
	}
	r.clock.Advance(turns.RunMaxLife + time.Second)
	for _, id := range []string{running.RunID, queued.RunID} {
		if got, err := rc.Interrupt(ctx, id); err != nil || !got.Closed {
			t.Fatalf("interrupt %s: %+v %v", id, got, err)
		}
	}
	res, com := r.day(t)
	if res != 0 || com != 3_000 {
		t.Fatalf("after: reserved %d committed %d, want 0 and the running run's whole reservation", res, com)
	}
	// The ledger still counts what the run recorded, not the charge.
	got, err := r.st.GetRun(ctx, running.RunID)
	if err != nil || got.CostMicros != answered.CostMicros || got.CapChargedMicros != 3_000 {
		t.Fatalf("run %+v %v", got, err)
	}
}

// A failed turn (refunded by the rule) and a turn ended at its money
// bound (budget_cap, not refunded) each release their reservation and
// commit their cost in their final write.
func TestFailureAndBudgetCapSettle(t *testing.T) {
	r := newRig(t, capOpts)
	r.install(t, "inst-1", "user-1", turns.InstallRequest{})
	r.native.run = func(et turns.EngineTurn) turns.EngineResult {
		switch et.Run.Message {
		case "fail":
			et.Run.AddCost(runs.Cost{ModelMicros: 11}) // an estimated call
			et.Run.End(runs.StatusFailed, runs.ErrLLM, "the model could not be reached", *et.Run.StartedAt)
			return turns.EngineResult{Infrastructure: true}
		default:
			et.Run.Steps = append(et.Run.Steps, runs.Step{CostMicros: et.Run.ReservedMicros - 100})
			et.Run.AddCost(runs.Cost{ModelMicros: et.Run.ReservedMicros - 100})
			et.Run.End(runs.StatusFailed, runs.ErrBudget, "the next call would pass the reservation", *et.Run.StartedAt)
			return turns.EngineResult{}
		}
	}
	sub, err := r.submit(user, "inst-1", "fail", "")
	if err != nil || sub.Run.Status != runs.StatusFailed || !sub.Run.Refunded {
		t.Fatalf("fail: %+v %v", sub, err)
	}
	if res, com := r.day(t); res != 0 || com != 11 {
		t.Fatalf("after the failure: reserved %d committed %d", res, com)
	}
	sub, err = r.submit(user, "inst-1", "spend", "")
	if err != nil || sub.Run.ErrorKind != runs.ErrBudget || sub.Run.Refunded {
		t.Fatalf("budget: %+v %v", sub, err)
	}
	if res, com := r.day(t); res != 0 || com != 11+2_900 {
		t.Fatalf("after budget_cap: reserved %d committed %d", res, com)
	}
	if u := r.usage(t, user); u.TurnsUsed != 1 || u.ReservedMicros != 0 {
		t.Errorf("usage %+v", u)
	}
}

// The service refuses at the cap with the day's figures once what is
// committed and reserved leaves less than the least useful reservation.
func TestServiceRefusesAtTheCapWithTheReservedFigures(t *testing.T) {
	r, _ := reaperRig(t, rigOpts{spendCap: 1_000, turnBound: 400, minReservation: 300})
	for range 2 {
		r.admitted(t) // 400 each, left queued
	}
	_, err := r.submit(user, "inst-1", "third", "")
	var spend *turns.SpendCapError
	if !errors.As(err, &spend) || !errors.Is(err, turns.ErrSpendCapReached) {
		t.Fatalf("200 left, below the least useful 300: %v", err)
	}
	if spend.Limit != 1_000 || spend.Spent != 0 || spend.Reserved != money.Micros(800) {
		t.Errorf("refusal %+v", spend)
	}
	if u := r.usage(t, user); u.TurnsUsed != 2 || u.ReservedMicros != 800 {
		t.Errorf("usage %+v", u)
	}
}
