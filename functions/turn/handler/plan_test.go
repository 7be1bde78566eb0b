package handler_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/commonly/runtime/shared/turns"
)

// planReads counts the store's plan reads.
type planReads struct {
	turns.Store
	n atomic.Int64
}

func (s *planReads) GetPlan(ctx context.Context, userID string) (turns.Plan, error) {
	s.n.Add(1)
	return s.Store.GetPlan(ctx, userID)
}

func (s *planReads) GetInstallAndPlan(ctx context.Context, installID, userID string) (*turns.Install, turns.Plan, error) {
	s.n.Add(1)
	return s.Store.GetInstallAndPlan(ctx, installID, userID)
}

// TestPlanChangedByAnotherContainer: a warm container remembers a user's
// plan instead of reading it on every turn, and a plan changed elsewhere
// (here written to the store directly, as another container would) takes
// effect on the next turn, upgrade and downgrade alike.
func TestPlanChangedByAnotherContainer(t *testing.T) {
	reads := &planReads{}
	e := newEnv(t, envOpts{limits: "free=2,pro=4", installCacheTTL: time.Minute, storeWrap: func(s turns.Store) turns.Store {
		reads.Store = s
		return reads
	}})
	e.install(t, "inst-1", "user-1", nil)
	turn := func(want int) {
		t.Helper()
		if r := e.turn(t, "inst-1", "user-1", fmt.Sprint("turn ", time.Now().UnixNano()), ""); r.StatusCode != want {
			t.Fatalf("turn: %d %s, want %d", r.StatusCode, r.Body, want)
		}
	}
	turn(202)
	turn(202)
	if got := reads.n.Load(); got != 1 {
		t.Fatalf("two turns on a warm container read the plan %d times, want once", got)
	}
	checkProblem(t, e.turn(t, "inst-1", "user-1", "third", ""), 429, "turn_ceiling_reached")

	// Upgraded elsewhere: the remembered plan (free) fails the admission's
	// check, the plan is read once and the turn is admitted under pro.
	if err := e.st.SetPlan(context.Background(), "user-1", turns.PlanPro, e.clock.Now()); err != nil {
		t.Fatal(err)
	}
	turn(202)
	turn(202)
	if got := reads.n.Load(); got != 2 {
		t.Fatalf("plan reads after the upgrade: %d, want 2", got)
	}
	p := checkProblem(t, e.turn(t, "inst-1", "user-1", "fifth", ""), 429, "turn_ceiling_reached")
	if *p.Limit != 4 || *p.Used != 4 {
		t.Errorf("pro ceiling: limit %d used %d", *p.Limit, *p.Used)
	}

	// Downgraded elsewhere on a new day: the remembered pro must not admit
	// a third free turn.
	e.clock.Set(e.clock.Now().Add(24 * time.Hour))
	if err := e.st.SetPlan(context.Background(), "user-1", turns.PlanFree, e.clock.Now()); err != nil {
		t.Fatal(err)
	}
	turn(202)
	turn(202)
	p = checkProblem(t, e.turn(t, "inst-1", "user-1", "third free", ""), 429, "turn_ceiling_reached")
	if *p.Limit != 2 || *p.Used != 2 {
		t.Errorf("free ceiling after the downgrade: limit %d used %d", *p.Limit, *p.Used)
	}
	u := decode[map[string]any](t, e.do(t, event(t, "usage.json")).Body)
	if u["plan"] != "free" || u["turnsUsed"] != 2.0 || u["turnsLimit"] != 2.0 {
		t.Errorf("usage = %v", u)
	}
}

// flippingPlan answers every admission as though the plan had just changed.
type flippingPlan struct {
	turns.Store
	admits atomic.Int64
}

func (s *flippingPlan) Admit(context.Context, turns.Admission) (turns.AdmitResult, error) {
	s.admits.Add(1)
	return turns.AdmitResult{PlanChanged: true}, nil
}

// TestPlanThatKeepsChangingFailsClosed: a plan that changes under every
// admission is refused with 503 after a bounded number of tries, not
// admitted unchecked and not retried for ever.
func TestPlanThatKeepsChangingFailsClosed(t *testing.T) {
	flip := &flippingPlan{}
	e := newEnv(t, envOpts{storeWrap: func(s turns.Store) turns.Store {
		flip.Store = s
		return flip
	}})
	e.install(t, "inst-1", "user-1", nil)
	checkProblem(t, e.turn(t, "inst-1", "user-1", "hi", ""), 503, "unavailable")
	if got := flip.admits.Load(); got != 3 {
		t.Errorf("admissions tried: %d, want 3", got)
	}
}
