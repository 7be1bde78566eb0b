package store_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/commonly/runtime/shared/money"
	"github.com/commonly/runtime/shared/runs"
	"github.com/commonly/runtime/shared/store"
	"github.com/commonly/runtime/shared/turns"
	"github.com/commonly/runtime/shared/utcday"
)

// capped is an admission under a spend cap of capMicros, each turn
// reserving up to bound, at least minRes.
func capped(run *runs.Run, capMicros, bound, minRes money.Micros) turns.Admission {
	return turns.Admission{Plan: turns.PlanFree, Run: run, Limit: 1000, SpendCap: capMicros, Reserve: bound, MinReserve: minRes, Now: now}
}

func usageOf(t *testing.T, s *store.Dynamo, user string) turns.Usage {
	t.Helper()
	u, err := s.Usage(context.Background(), user, utcday.Of(now))
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// finish ends a claimed run with cost and writes it.
func finish(t *testing.T, s *store.Dynamo, r *runs.Run, cost money.Micros, refund bool) {
	t.Helper()
	ctx := context.Background()
	claimed, err := s.ClaimRun(ctx, r.RunID, now)
	if err != nil {
		t.Fatal(err)
	}
	r.Status, r.Attempts = runs.StatusRunning, claimed.Attempts
	r.AddCost(runs.Cost{ModelMicros: cost})
	r.End(runs.StatusSucceeded, "", "", now)
	if err := s.FinishRun(ctx, r, refund); err != nil {
		t.Fatal(err)
	}
}

// TestReservationAtTheBoundaries: a turn reserves its whole bound when the
// day has room, the rest of the day when it has less, exactly the least
// useful reservation when that is all that is left, and is refused at
// the cap (with the day's figures) a micro-dollar below it.
func TestReservationAtTheBoundaries(t *testing.T) {
	ctx := context.Background()
	const capM, bound, minRes = 1000, 400, 100
	cases := []struct {
		name     string
		held     []money.Micros // reservations already outstanding
		admitted bool
		reserved money.Micros
	}{
		{"an empty day reserves the whole bound", nil, true, 400},
		{"less than the bound left reserves what is left", []money.Micros{400, 400}, true, 200},
		{"exactly the least useful reservation left", []money.Micros{400, 400, 100}, true, 100},
		{"one micro-dollar under it is refused", []money.Micros{400, 400, 101}, false, 0},
		{"exactly at the cap is refused", []money.Micros{400, 400, 200}, false, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := newStore(t)
			var sum money.Micros
			for i, h := range c.held {
				res, err := s.Admit(ctx, capped(newRun(fmt.Sprintf("h%d", i), "u1", now), capM, h, 1))
				if err != nil || !res.Admitted {
					t.Fatalf("holding %d: %+v %v", h, res, err)
				}
				sum += h
			}
			run := newRun("r", "u1", now)
			res, err := s.Admit(ctx, capped(run, capM, bound, minRes))
			if err != nil {
				t.Fatal(err)
			}
			if res.Admitted != c.admitted || run.ReservedMicros != c.reserved {
				t.Fatalf("admitted %v reserved %d (%+v), want %v %d", res.Admitted, run.ReservedMicros, res, c.admitted, c.reserved)
			}
			u := usageOf(t, s, "u1")
			if !c.admitted {
				if !res.CapRefused || res.CapReserved != sum || res.CapSpent != 0 || res.CeilingUsed != 0 {
					t.Errorf("refusal %+v, want the cap with %d reserved", res, sum)
				}
				if u.ReservedMicros != int64(sum) || u.Turns != int64(len(c.held)) {
					t.Errorf("a refused turn changed the day: %+v", u)
				}
				return
			}
			if u.ReservedMicros != int64(sum+c.reserved) {
				t.Errorf("day reserved %d, want %d", u.ReservedMicros, sum+c.reserved)
			}
			got, err := s.GetRun(ctx, "r")
			if err != nil || got.ReservedMicros != c.reserved {
				t.Errorf("run's reservation %v %v, want %d", got, err, c.reserved)
			}
		})
	}
}

// A cap below the least useful reservation admits nothing: no turn
// could make one useful call under it.
func TestCapBelowTheLeastUsefulReservationAdmitsNothing(t *testing.T) {
	s := newStore(t)
	res, err := s.Admit(context.Background(), capped(newRun("r", "u1", now), 99, 400, 100))
	if err != nil || res.Admitted || !res.CapRefused {
		t.Fatalf("%+v %v", res, err)
	}
	if u := usageOf(t, s, "u1"); u.Turns != 0 || u.ReservedMicros != 0 {
		t.Errorf("day %+v", u)
	}
}

// The ceiling still refuses under a cap, and says so.
func TestCeilingUnderACap(t *testing.T) {
	s := newStore(t)
	a := capped(newRun("r1", "u1", now), 10_000, 100, 10)
	a.Limit = 1
	if res, err := s.Admit(context.Background(), a); err != nil || !res.Admitted {
		t.Fatal(res, err)
	}
	a.Run = newRun("r2", "u1", now)
	res, err := s.Admit(context.Background(), a)
	if err != nil || res.Admitted || res.CapRefused || res.CeilingUsed != 1 {
		t.Fatalf("%+v %v", res, err)
	}
}

// An idempotent retry reserves nothing: the idempotency record cancels
// the whole transaction, the reservation with it.
func TestIdempotentRetryDoesNotReserveTwice(t *testing.T) {
	s := newStore(t)
	ctx := context.Background()
	a := capped(newRun("r1", "u1", now), 10_000, 400, 100)
	a.IdempotencyKey, a.CallerID = "k1", "u1"
	if res, err := s.Admit(ctx, a); err != nil || !res.Admitted {
		t.Fatal(res, err)
	}
	for i := range 3 {
		again := capped(newRun(fmt.Sprintf("retry%d", i), "u1", now), 10_000, 400, 100)
		again.IdempotencyKey, again.CallerID = "k1", "u1"
		res, err := s.Admit(ctx, again)
		if err != nil || res.ReplayOf != "r1" || again.Run.ReservedMicros != 0 {
			t.Fatalf("retry %d: %+v %v (reserved %d)", i, res, err, again.Run.ReservedMicros)
		}
	}
	if u := usageOf(t, s, "u1"); u.ReservedMicros != 400 || u.Turns != 1 {
		t.Errorf("day %+v, want one turn holding 400", u)
	}
}

// The final write settles the reservation in the same transaction that
// finishes the run: released, the cost committed; a refund gives the
// turn back too; a second write settles nothing.
func TestFinalWriteSettlesTheReservation(t *testing.T) {
	s := newStore(t)
	ctx := context.Background()
	r1, r2 := newRun("r1", "u1", now), newRun("r2", "u1", now)
	for _, r := range []*runs.Run{r1, r2} {
		if res, err := s.Admit(ctx, capped(r, 10_000, 400, 100)); err != nil || !res.Admitted {
			t.Fatal(res, err)
		}
	}
	finish(t, s, r1, 123, false)
	if u := usageOf(t, s, "u1"); u.ReservedMicros != 400 || u.CapCommittedMicros != 123 || u.Turns != 2 {
		t.Fatalf("after r1: %+v", u)
	}
	finish(t, s, r2, 7, true)
	if u := usageOf(t, s, "u1"); u.ReservedMicros != 0 || u.CapCommittedMicros != 130 || u.Turns != 1 {
		t.Fatalf("after r2 (refunded): %+v", u)
	}
	// Final already: nothing settles twice.
	r1.AddCost(runs.Cost{ModelMicros: 1000})
	if err := s.FinishRun(ctx, r1, false); err == nil {
		t.Fatal("a second final write succeeded")
	}
	if u := usageOf(t, s, "u1"); u.ReservedMicros != 0 || u.CapCommittedMicros != 130 {
		t.Fatalf("after a second write: %+v", u)
	}
	got, err := s.GetRun(ctx, "r1")
	if err != nil || got.CapChargedMicros != 123 || got.ReservedMicros != 400 {
		t.Fatalf("run %+v %v", got, err)
	}
	// What was released is available again: 10,000 - 130 left.
	r3 := newRun("r3", "u1", now)
	if res, err := s.Admit(ctx, capped(r3, 10_000, 10_000, 100)); err != nil || !res.Admitted || r3.ReservedMicros != 10_000-130 {
		t.Fatalf("after settling: %+v %v reserved %d", res, err, r3.ReservedMicros)
	}
}

// A run whose closer charges it more than its cost (an abandoned run,
// charged its whole reservation) commits that charge.
func TestAbandonedChargeIsCommitted(t *testing.T) {
	s := newStore(t)
	ctx := context.Background()
	r := newRun("r1", "u1", now)
	if res, err := s.Admit(ctx, capped(r, 10_000, 400, 100)); err != nil || !res.Admitted {
		t.Fatal(res, err)
	}
	claimed, err := s.ClaimRun(ctx, "r1", now)
	if err != nil {
		t.Fatal(err)
	}
	r.Attempts = claimed.Attempts
	r.AddCost(runs.Cost{ModelMicros: 50})
	r.CapChargedMicros = r.ReservedMicros
	r.End(runs.StatusInterrupted, runs.ErrInterrupted, "gone", now.Add(time.Minute))
	if err := s.FinishRun(ctx, r, false); err != nil {
		t.Fatal(err)
	}
	if u := usageOf(t, s, "u1"); u.ReservedMicros != 0 || u.CapCommittedMicros != 400 {
		t.Fatalf("day %+v, want the whole reservation committed", u)
	}
}

// Under concurrency the reservations never pass the cap: 40 turns at
// once against room for 10 whole bounds, each admitted turn holding what
// it reserved, the day's holdings exactly their sum.
func TestReservationsNeverPassTheCapUnderConcurrency(t *testing.T) {
	s := newStore(t)
	ctx := context.Background()
	const capM, bound = 10_050, 1000
	var mu sync.Mutex
	var sum money.Micros
	admitted := 0
	var wg sync.WaitGroup
	for i := range 40 {
		wg.Go(func() {
			r := newRun(fmt.Sprintf("r%d", i), "u1", now)
			res, err := s.Admit(ctx, capped(r, capM, bound, 50))
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			defer mu.Unlock()
			if res.Admitted {
				admitted++
				sum += r.ReservedMicros
			}
		})
	}
	wg.Wait()
	u := usageOf(t, s, "u1")
	if sum > capM || u.ReservedMicros != int64(sum) || u.Turns != int64(admitted) {
		t.Fatalf("reserved %d by %d turns, day %+v, cap %d", sum, admitted, u, capM)
	}
	// Ten whole bounds and the 50 left as the eleventh reservation.
	if admitted != 11 || sum != capM {
		t.Errorf("%d admitted holding %d, want 11 holding %d", admitted, sum, capM)
	}
}
