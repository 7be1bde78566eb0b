package store_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/commonly/runtime/shared/ledger"
	"github.com/commonly/runtime/shared/money"
	"github.com/commonly/runtime/shared/turns"
)

// The ledger's writes are conditional on exactly what was read: the
// first write on there being no ledger, later ones on its revision.
func TestLedgerWritesAreConditionalOnTheRevisionRead(t *testing.T) {
	s := newStore(t)
	ctx := context.Background()
	k := ledger.DayKey{UserID: "u1", Day: "2026-12-02"}
	first := ledger.Write{Key: k, From: 0, Delta: 30, Next: ledger.Book{Rev: 1, CostMicros: 30, Runs: map[string]ledger.Counted{"r1": {CostMicros: 30, Seq: "10"}}}}
	if err := s.WriteDay(ctx, first); err != nil {
		t.Fatal(err)
	}
	if err := s.WriteDay(ctx, first); !errors.Is(err, ledger.ErrConflict) {
		t.Fatalf("a second first write: %v, want ErrConflict", err)
	}
	second := ledger.Write{Key: k, From: 1, Delta: -5, Next: ledger.Book{Rev: 2, CostMicros: 25, Runs: map[string]ledger.Counted{"r1": {CostMicros: 25, Seq: "11"}}}}
	if err := s.WriteDay(ctx, second); err != nil {
		t.Fatal(err)
	}
	if err := s.WriteDay(ctx, second); !errors.Is(err, ledger.ErrConflict) {
		t.Fatalf("a write from a stale revision: %v, want ErrConflict", err)
	}
	// Without a delta the ledger alone is written, with the same condition.
	third := ledger.Write{Key: k, From: 2, Next: ledger.Book{Rev: 3, CostMicros: 25, Runs: map[string]ledger.Counted{"r1": {CostMicros: 25, Seq: "11"}, "r2": {CostMicros: 0, Seq: "12"}}}}
	if err := s.WriteDay(ctx, third); err != nil {
		t.Fatal(err)
	}
	if err := s.WriteDay(ctx, third); !errors.Is(err, ledger.ErrConflict) {
		t.Fatalf("a ledger-only write from a stale revision: %v, want ErrConflict", err)
	}

	got, err := s.ReadDays(ctx, []ledger.DayKey{k})
	if err != nil {
		t.Fatal(err)
	}
	day := got[k]
	if day.Book.Rev != 3 || day.Book.CostMicros != 25 || day.Book.Runs["r1"] != (ledger.Counted{CostMicros: 25, Seq: "11"}) || len(day.Book.Runs) != 2 {
		t.Fatalf("read back %+v", day)
	}
	u, err := s.Usage(ctx, k.UserID, k.Day)
	if err != nil || u.CostMicros != 25 {
		t.Fatalf("usage %+v, %v; want the ledger's 25", u, err)
	}
}

// The ledger's usage item is the admission's: the turns it counts and the
// cost the ledger adds are on one item.
func TestLedgerAddsToTheAdmissionsUsageItem(t *testing.T) {
	s := newStore(t)
	ctx := context.Background()
	r := newRun("r1", "u1", now)
	if res, err := s.Admit(ctx, turns.Admission{Plan: turns.PlanFree, Run: r, Limit: 5, Now: now}); err != nil || !res.Admitted {
		t.Fatalf("admit: %+v %v", res, err)
	}
	k := ledger.DayKey{UserID: "u1", Day: r.Day}
	if err := s.WriteDay(ctx, ledger.Write{Key: k, Delta: 7, Next: ledger.Book{Rev: 1, CostMicros: 7, Runs: map[string]ledger.Counted{"r1": {CostMicros: 7, Seq: "1"}}}}); err != nil {
		t.Fatal(err)
	}
	got, err := s.ReadDays(ctx, []ledger.DayKey{k})
	if err != nil || got[k].Turns != 1 {
		t.Fatalf("turns %+v, %v", got[k], err)
	}
	u, err := s.Usage(ctx, "u1", r.Day)
	if err != nil || u.Turns != 1 || u.CostMicros != 7 {
		t.Fatalf("usage %+v, %v", u, err)
	}
}

// More user-days than one BatchGetItem takes are read in several calls.
func TestReadDaysPastOneBatch(t *testing.T) {
	s := newStore(t)
	ctx := context.Background()
	var days []ledger.DayKey
	for i := range 120 {
		k := ledger.DayKey{UserID: fmt.Sprintf("u%d", i), Day: "2026-12-02"}
		days = append(days, k)
		if i%7 == 0 {
			if err := s.WriteDay(ctx, ledger.Write{Key: k, Delta: money.Micros(i), Next: ledger.Book{Rev: 1, CostMicros: money.Micros(i), Runs: map[string]ledger.Counted{"r": {CostMicros: money.Micros(i), Seq: "1"}}}}); err != nil {
				t.Fatal(err)
			}
		}
	}
	got, err := s.ReadDays(ctx, days)
	if err != nil || len(got) != len(days) {
		t.Fatalf("%d days, %v", len(got), err)
	}
	for i, k := range days {
		want := int64(0)
		if i%7 == 0 {
			want = 1
		}
		if got[k].Book.Rev != want || (want == 1 && got[k].Book.CostMicros != money.Micros(i)) {
			t.Errorf("%v: %+v", k, got[k].Book)
		}
	}
}

func TestMarkAlarmOnce(t *testing.T) {
	s := newStore(t)
	ctx := context.Background()
	k := ledger.DayKey{UserID: "u1", Day: "2026-12-02"}
	if set, err := s.MarkAlarm(ctx, k, "a1", "", now); err != nil || !set {
		t.Fatalf("first mark: %v %v", set, err)
	}
	if set, err := s.MarkAlarm(ctx, k, "a1", "", now); err != nil || set {
		t.Fatalf("second mark from none: %v %v, want not set", set, err)
	}
	// Another threshold's alarm replaces the marker it read.
	if set, err := s.MarkAlarm(ctx, k, "a2", "a1", now); err != nil || !set {
		t.Fatalf("mark over a1: %v %v", set, err)
	}
	got, err := s.ReadDays(ctx, []ledger.DayKey{k})
	if err != nil || got[k].AlarmID != "a2" {
		t.Fatalf("marker %+v, %v", got[k], err)
	}
}
