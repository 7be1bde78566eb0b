package turns_test

import (
	"context"
	"fmt"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/commonly/runtime/internal/dynamodblocal"
	"github.com/commonly/runtime/shared/runs"
	"github.com/commonly/runtime/shared/store"
	"github.com/commonly/runtime/shared/turns"
	"github.com/commonly/runtime/shared/utcday"
)

// countedDB counts the store's DynamoDB calls.
type countedDB struct {
	store.DynamoAPI
	calls atomic.Int64
}

func (c *countedDB) GetItem(ctx context.Context, in *dynamodb.GetItemInput, o ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	c.calls.Add(1)
	return c.DynamoAPI.GetItem(ctx, in, o...)
}

func (c *countedDB) PutItem(ctx context.Context, in *dynamodb.PutItemInput, o ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	c.calls.Add(1)
	return c.DynamoAPI.PutItem(ctx, in, o...)
}

func (c *countedDB) TransactWriteItems(ctx context.Context, in *dynamodb.TransactWriteItemsInput, o ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error) {
	c.calls.Add(1)
	return c.DynamoAPI.TransactWriteItems(ctx, in, o...)
}

func (c *countedDB) Query(ctx context.Context, in *dynamodb.QueryInput, o ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error) {
	c.calls.Add(1)
	return c.DynamoAPI.Query(ctx, in, o...)
}

// BenchmarkReclaim is the runs side of a reaper sweep: 1,000 abandoned
// runs (claimed, one model call checkpointed; every other one with no
// answer, so refunded) listed from the open index and each interrupted,
// on the embedded DynamoDB. One op is the whole sweep; ddb-calls/run is
// what each run costs in DynamoDB requests.
func BenchmarkReclaim(b *testing.B) {
	const open = 1000
	srv, err := dynamodblocal.StartWithTables(context.Background(), "127.0.0.1:0", tables)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = srv.Close() })
	db := &countedDB{DynamoAPI: srv.Client()}
	st, err := store.New(store.Config{DB: db, Tables: tables})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	t0 := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	now := t0
	rc, err := turns.NewReclaimer(turns.ReclaimerConfig{Store: st, Now: func() time.Time { return now }, Log: slog.New(slog.DiscardHandler)})
	if err != nil {
		b.Fatal(err)
	}
	var calls int64
	for i := range b.N {
		b.StopTimer()
		at := t0.Add(time.Duration(i) * time.Hour)
		for j := range open {
			id := fmt.Sprintf("run-%d-%d", i, j)
			r := &runs.Run{RunID: id, InstallID: "inst-1", UserID: fmt.Sprintf("user-%d", j%50), Engine: "native", Message: "hi",
				Day: utcday.Of(at), Status: runs.StatusQueued, CreatedAt: at, Steps: []runs.Step{}}
			if res, err := st.Admit(ctx, turns.Admission{Plan: turns.PlanFree, Run: r, Limit: 1 << 30, Now: at}); err != nil || !res.Admitted {
				b.Fatalf("admit: %+v %v", res, err)
			}
			claimed, err := st.ClaimRun(ctx, id, at)
			if err != nil {
				b.Fatal(err)
			}
			step := answered
			if j%2 == 1 {
				step = unanswered
			}
			claimed.Steps = append(claimed.Steps, step)
			claimed.AddCost(runs.Cost{ModelMicros: step.CostMicros})
			if err := st.CheckpointRun(ctx, claimed, nil); err != nil {
				b.Fatal(err)
			}
		}
		now = at.Add(turns.RunMaxLife + time.Second)
		before := db.calls.Load()
		b.StartTimer()

		list, err := abandonedAll(ctx, rc, 2*open)
		if err != nil || len(list) != open {
			b.Fatalf("abandoned: %d, %v", len(list), err)
		}
		for _, o := range list {
			if got, err := rc.Interrupt(ctx, o.RunID); err != nil || !got.Closed {
				b.Fatalf("interrupt %s: %+v, %v", o.RunID, got, err)
			}
		}

		b.StopTimer()
		calls += db.calls.Load() - before
		b.StartTimer()
	}
	b.ReportMetric(float64(calls)/float64(b.N*open), "ddb-calls/run")
}
