package store

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/commonly/runtime/shared/tablekeys"
)

// partialDB answers the first `partial` BatchGetItems with one key at
// most (none when stuck) and returns the rest as unprocessed, as DynamoDB
// may under load; later calls answer every key.
type partialDB struct {
	DynamoAPI
	partial, calls int
	stuck          bool
}

func (p *partialDB) BatchGetItem(_ context.Context, in *dynamodb.BatchGetItemInput, _ ...func(*dynamodb.Options)) (*dynamodb.BatchGetItemOutput, error) {
	p.calls++
	out := &dynamodb.BatchGetItemOutput{Responses: map[string][]map[string]types.AttributeValue{}}
	for table, ka := range in.RequestItems {
		answer := ka.Keys
		if p.calls <= p.partial {
			n := min(len(ka.Keys), 1)
			if p.stuck {
				n = 0
			}
			answer = ka.Keys[:n]
			out.UnprocessedKeys = map[string]types.KeysAndAttributes{table: {Keys: ka.Keys[n:], ConsistentRead: ka.ConsistentRead}}
		}
		for _, k := range answer {
			item := map[string]types.AttributeValue{attrTurns: num(1)}
			for name, v := range k {
				item[name] = v
			}
			out.Responses[table] = append(out.Responses[table], item)
		}
	}
	return out, nil
}

func newPartial(partial int) (*Dynamo, *partialDB, *[]time.Duration) {
	db := &partialDB{partial: partial, stuck: partial > maxBatchAttempts}
	d := mustNew(Config{DB: db, Tables: Tables{State: "state", Runs: "runs"}})
	var waits []time.Duration
	d.unprocessed.Sleep = func(_ context.Context, w time.Duration) error { waits = append(waits, w); return nil }
	return d, db, &waits
}

func TestBatchGetRetriesUnprocessedKeys(t *testing.T) {
	ks := []tablekeys.Key{tablekeys.Plan("u1"), tablekeys.UsageOnDay("u1", "2026-12-02"), tablekeys.Install("i1")}
	d, db, waits := newPartial(2)
	got, err := d.batchGetState(context.Background(), ks...)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 || db.calls != 3 || len(*waits) != 2 {
		t.Fatalf("%d items after %d calls and waits %v; want 3 after 3 calls and 2 waits", len(got), db.calls, *waits)
	}
	for i, w := range *waits {
		if ceil := d.unprocessed.Ceiling(i); w < 0 || w >= ceil {
			t.Errorf("wait %d = %v, want in [0, %v)", i, w, ceil)
		}
	}

	d, db, _ = newPartial(1000)
	if _, err := d.batchGetState(context.Background(), ks...); err == nil || !strings.Contains(err.Error(), "unprocessed") || db.calls != 6 {
		t.Errorf("never processed: %v after %d calls, want an error after 6", err, db.calls)
	}

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	d, db, _ = newPartial(1000)
	if _, err := d.batchGetState(ctx, ks...); !errors.Is(err, context.Canceled) || db.calls != 1 {
		t.Errorf("cancelled: %v after %d calls, want context.Canceled after 1", err, db.calls)
	}
}
