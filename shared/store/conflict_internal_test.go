package store

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/commonly/runtime/shared/turns"
)

// busyDB answers the first `busy` writes as DynamoDB answers a write that
// meets a transaction in flight on the same item: TransactionConflict for
// a plain write, a TransactionCanceled with a TransactionConflict reason
// for a transaction. Other methods are not used by these tests.
type busyDB struct {
	DynamoAPI
	busy, puts, transacts int
}

func (b *busyDB) PutItem(context.Context, *dynamodb.PutItemInput, ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	b.puts++
	if b.puts <= b.busy {
		return nil, &types.TransactionConflictException{Message: aws.String("Transaction is ongoing for the item")}
	}
	return &dynamodb.PutItemOutput{}, nil
}

func (b *busyDB) TransactWriteItems(_ context.Context, in *dynamodb.TransactWriteItemsInput, _ ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error) {
	b.transacts++
	if b.transacts <= b.busy {
		reasons := make([]types.CancellationReason, len(in.TransactItems))
		for i := range reasons {
			reasons[i].Code = aws.String("None")
		}
		reasons[0].Code = aws.String("TransactionConflict")
		return nil, &types.TransactionCanceledException{CancellationReasons: reasons}
	}
	return &dynamodb.TransactWriteItemsOutput{}, nil
}

func newBusy(busy int) (*Dynamo, *busyDB, *[]time.Duration) {
	db := &busyDB{busy: busy}
	d := mustNew(Config{DB: db, Tables: Tables{State: "state", Runs: "runs"}})
	var waits []time.Duration
	d.conflicts.Sleep = func(_ context.Context, w time.Duration) error { waits = append(waits, w); return nil }
	return d, db, &waits
}

func TestSetPlanRetriesATransactionInFlight(t *testing.T) {
	d, db, waits := newBusy(2)
	if err := d.SetPlan(context.Background(), "u1", turns.PlanPro, time.Now()); err != nil {
		t.Fatalf("SetPlan: %v", err)
	}
	if db.puts != 3 || len(*waits) != 2 {
		t.Errorf("puts %d, waits %v; want 3 puts after 2 waits", db.puts, *waits)
	}

	d, db, _ = newBusy(1000)
	err := d.SetPlan(context.Background(), "u1", turns.PlanPro, time.Now())
	if !errors.Is(err, turns.ErrUnavailable) || db.puts != maxConflictRetries+1 {
		t.Errorf("always busy: %v after %d puts, want ErrUnavailable after %d", err, db.puts, maxConflictRetries+1)
	}
}

func TestTransactRetriesConflicts(t *testing.T) {
	d, db, waits := newBusy(3)
	items := []types.TransactWriteItem{{ConditionCheck: &types.ConditionCheck{}}, {Put: &types.Put{}}}
	if err := d.transact(context.Background(), items); err != nil {
		t.Fatalf("transact: %v", err)
	}
	if db.transacts != 4 || len(*waits) != 3 {
		t.Errorf("transactions %d, waits %v; want 4 after 3 waits", db.transacts, *waits)
	}
	for i, w := range *waits {
		if w < 0 || w >= 5*time.Millisecond<<i {
			t.Errorf("wait %d = %v, want in [0, %v)", i, w, 5*time.Millisecond<<i)
		}
	}

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	d, db, _ = newBusy(1000)
	if err := d.transact(ctx, items); !errors.Is(err, context.Canceled) || db.transacts != 1 {
		t.Errorf("cancelled: %v after %d transactions, want context.Canceled after 1", err, db.transacts)
	}
}

func mustNew(cfg Config) *Dynamo {
	d, err := New(cfg)
	if err != nil {
		panic(err)
	}
	return d
}
