package ledger_test

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/commonly/runtime/internal/dynamodblocal"
	"github.com/commonly/runtime/shared/ledger"
	"github.com/commonly/runtime/shared/money"
	"github.com/commonly/runtime/shared/store"
)

var tables = store.Tables{State: "state", Runs: "runs"}

func newStore(t *testing.T) *store.Dynamo {
	t.Helper()
	srv, err := dynamodblocal.StartWithTables(context.Background(), "127.0.0.1:0", tables)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	st, err := store.New(store.Config{DB: srv.Client(), Tables: tables})
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func record(seq int, run, user, day string, cost money.Micros) ledger.Record {
	return ledger.Record{Seq: strconv.Itoa(seq), Op: ledger.Modify, New: map[string]types.AttributeValue{
		"runId": s(run), "userId": s(user), "day": s(day), "engine": s("native"), "costMicros": n(strconv.FormatInt(int64(cost), 10)),
	}}
}

// racingStore lets another writer in between the ledger's read of a day
// and its first write, as a concurrent batch of another shard would.
type racingStore struct {
	*store.Dynamo
	before func()
	writes int
}

func (r *racingStore) WriteDay(ctx context.Context, w ledger.Write) error {
	r.writes++
	if f := r.before; f != nil {
		r.before = nil
		f()
	}
	return r.Dynamo.WriteDay(ctx, w)
}

// waits records the backoff's waits instead of sleeping.
type waits []int

func (w *waits) Wait(_ context.Context, attempt int) error { *w = append(*w, attempt); return nil }

type nopPublisher struct{}

func (nopPublisher) Publish(_ context.Context, alarms []ledger.Alarm) []error {
	return make([]error, len(alarms))
}

func newLedger(t *testing.T, st ledger.Store, w *waits) *ledger.Ledger {
	t.Helper()
	l, err := ledger.New(ledger.Config{Store: st, Publisher: nopPublisher{}, Threshold: 2_000_000, Backoff: w})
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// Two shards counting runs of the same user-day at once: the second
// writer's condition fails, it reads the day again and adds its own.
func TestConcurrentShardsOnOneUserDay(t *testing.T) {
	st := newStore(t)
	ctx := context.Background()
	var w waits
	other := newLedger(t, st, &waits{})
	racing := &racingStore{Dynamo: st, before: func() {
		if res := other.Process(ctx, []ledger.Record{record(20, "r2", "u1", "2026-12-02", 50)}); len(res.Failed) != 0 {
			t.Errorf("other shard: %+v", res)
		}
	}}
	res := newLedger(t, racing, &w).Process(ctx, []ledger.Record{record(10, "r1", "u1", "2026-12-02", 100)})
	if len(res.Failed) != 0 || res.Conflicts != 1 || res.Writes != 1 || racing.writes != 2 || !slices.Equal(w, waits{0}) {
		t.Fatalf("result %+v, writes %d, waits %v", res, racing.writes, w)
	}
	k := ledger.DayKey{UserID: "u1", Day: "2026-12-02"}
	got, err := st.ReadDays(ctx, []ledger.DayKey{k})
	if err != nil {
		t.Fatal(err)
	}
	if b := got[k].Book; b.CostMicros != 150 || b.Rev != 2 || len(b.Runs) != 2 {
		t.Fatalf("book %+v", b)
	}
	if u, err := st.Usage(ctx, "u1", "2026-12-02"); err != nil || u.CostMicros != 150 {
		t.Fatalf("usage %+v %v", u, err)
	}
}

// conflictStore is always beaten to the write.
type conflictStore struct {
	*store.Dynamo
	writes int
}

func (c *conflictStore) WriteDay(context.Context, ledger.Write) error {
	c.writes++
	return ledger.ErrConflict
}

// readFails cannot read.
type readFails struct{ ledger.Store }

func (readFails) ReadDays(context.Context, []ledger.DayKey) (map[ledger.DayKey]ledger.Day, error) {
	return nil, errors.New("throttled")
}

func TestADayThatCannotBeWrittenIsRetriedFromItsFirstRecord(t *testing.T) {
	st := newStore(t)
	ctx := context.Background()
	batch := []ledger.Record{
		record(10, "r1", "u1", "2026-12-02", 100),
		record(11, "r2", "u2", "2026-12-02", 70),
		record(12, "r1", "u1", "2026-12-02", 120),
	}
	var w waits
	cs := &conflictStore{Dynamo: st}
	l, err := ledger.New(ledger.Config{Store: cs, Publisher: nopPublisher{}, Threshold: 1, Backoff: &w, MaxAttempts: 3})
	if err != nil {
		t.Fatal(err)
	}
	res := l.Process(ctx, batch)
	if !slices.Equal(res.Failed, []string{"10", "11"}) || cs.writes != 6 || !slices.Equal(w, waits{0, 1, 0, 1}) {
		t.Fatalf("failed %v after %d writes, waits %v", res.Failed, cs.writes, w)
	}
	if res.FailedRecords != 3 || res.Processed != 0 || len(res.Failures) != 2 || !errors.Is(res.Failures[0].Err, ledger.ErrConflict) {
		t.Fatalf("result %+v", res)
	}

	res = newLedger(t, readFails{st}, &waits{}).Process(ctx, batch)
	if !slices.Equal(res.Failed, []string{"10", "11"}) || res.FailedRecords != 3 {
		t.Fatalf("read failure: %+v", res)
	}
}

func TestNewChecksItsConfig(t *testing.T) {
	_, err := ledger.New(ledger.Config{Threshold: 0, MaxAttempts: -1})
	for _, want := range []string{"no store", "no publisher", "threshold", "MaxAttempts"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v does not name %q", err, want)
		}
	}
	if _, err := ledger.NewEventBridge(ledger.EventBridgeConfig{}); err == nil {
		t.Error("an EventBridge publisher without client and bus")
	}
}
