package store_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/commonly/runtime/internal/dynamodblocal"
	"github.com/commonly/runtime/shared/ledger"
	"github.com/commonly/runtime/shared/money"
	"github.com/commonly/runtime/shared/store"
	"github.com/commonly/runtime/shared/turns"
	"github.com/commonly/runtime/shared/utcday"
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

// countingDB counts the calls the store makes.
type countingDB struct {
	store.DynamoAPI
	calls map[string]int
}

func (c *countingDB) TransactWriteItems(ctx context.Context, in *dynamodb.TransactWriteItemsInput, opts ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error) {
	c.calls["TransactWriteItems"]++
	return c.DynamoAPI.TransactWriteItems(ctx, in, opts...)
}

func (c *countingDB) GetItem(ctx context.Context, in *dynamodb.GetItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	c.calls["GetItem"]++
	return c.DynamoAPI.GetItem(ctx, in, opts...)
}

// The spend cap is one more condition on the admission's counter: the
// same one transaction admits or refuses, and says which bound refused.
func TestAdmitChecksTheSpendCapInItsTransaction(t *testing.T) {
	srv, err := dynamodblocal.StartWithTables(context.Background(), "127.0.0.1:0", tables)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	db := &countingDB{DynamoAPI: srv.Client(), calls: map[string]int{}}
	s, err := store.New(store.Config{DB: db, Tables: tables})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	admit := func(id string, limit int64) turns.AdmitResult {
		t.Helper()
		clear(db.calls)
		res, err := s.Admit(ctx, turns.Admission{Plan: turns.PlanFree, Run: newRun(id, "u1", now), Limit: limit, SpendCap: 100, Reserve: 10, MinReserve: 1, Now: now})
		if err != nil {
			t.Fatal(err)
		}
		if db.calls["TransactWriteItems"] != 1 || db.calls["GetItem"] != 0 {
			t.Errorf("%s: calls %v, want the one transaction", id, db.calls)
		}
		return res
	}
	if res := admit("r1", 5); !res.Admitted {
		t.Fatalf("no cost yet: %+v", res)
	}
	k := ledger.DayKey{UserID: "u1", Day: utcday.Of(now)}
	if err := s.WriteDay(ctx, ledger.Write{Key: k, Delta: 99, Next: ledger.Book{Rev: 1, CostMicros: 99, Runs: map[string]ledger.Counted{"r1": {CostMicros: 99, Seq: "1"}}}}); err != nil {
		t.Fatal(err)
	}
	if res := admit("r2", 5); !res.Admitted {
		t.Fatalf("below the cap: %+v", res)
	}
	if err := s.WriteDay(ctx, ledger.Write{Key: k, From: 1, Delta: 1, Next: ledger.Book{Rev: 2, CostMicros: 100, Runs: map[string]ledger.Counted{"r1": {CostMicros: 100, Seq: "2"}}}}); err != nil {
		t.Fatal(err)
	}
	if res := admit("r3", 5); res.Admitted || !res.CapRefused || res.CapSpent != 100 || res.CeilingUsed != 0 {
		t.Fatalf("at the cap: %+v", res)
	}
	// Both bounds met: the cap is reported.
	if res := admit("r4", 2); res.Admitted || !res.CapRefused || res.CapSpent != 100 {
		t.Fatalf("at the cap and the ceiling: %+v", res)
	}
	if u, err := s.Usage(ctx, "u1", k.Day); err != nil || u.Turns != 2 {
		t.Fatalf("refused turns were counted: %+v %v", u, err)
	}
}
