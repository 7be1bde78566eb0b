// Package storetest reads what the store wrote, for the tests of the
// packages that write through it (the store, the reaper, the local
// stack): an item read through the SDK on the key schema, as an operator
// would, so that the store exports no read only tests call.
package storetest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/commonly/runtime/shared/sandbox"
	"github.com/commonly/runtime/shared/tablekeys"
	"github.com/commonly/runtime/shared/turns"
)

// Getter is the part of the DynamoDB client Sandbox uses.
type Getter interface {
	GetItem(ctx context.Context, in *dynamodb.GetItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error)
}

// Sandbox reads a sandbox's record from the state table, consistently;
// found is false when there is none.
func Sandbox(ctx context.Context, db Getter, stateTable, sandboxID string) (rec sandbox.Record, found bool, err error) {
	k := tablekeys.Sandbox(sandboxID)
	out, err := db.GetItem(ctx, &dynamodb.GetItemInput{
		TableName: aws.String(stateTable), ConsistentRead: aws.Bool(true),
		Key: map[string]types.AttributeValue{tablekeys.PK: &types.AttributeValueMemberS{Value: k.PK}, tablekeys.SK: &types.AttributeValueMemberS{Value: k.SK}},
	})
	if err != nil {
		return sandbox.Record{}, false, fmt.Errorf("get sandbox %s: %w", sandboxID, err)
	}
	if len(out.Item) == 0 {
		return sandbox.Record{}, false, nil
	}
	if err := attributevalue.UnmarshalMap(out.Item, &rec); err != nil {
		return sandbox.Record{}, false, fmt.Errorf("decode sandbox record: %w", err)
	}
	return rec, true, nil
}

// JournalReader is the part of the store AwaitJournal reads with.
type JournalReader interface {
	ReadJournal(ctx context.Context, runID string) ([]turns.JournalEntry, error)
}

// AwaitJournal waits, up to 20 s, until runID's journal holds at least n
// entries: a test's way to act once a turn's answer is recorded (its
// events flush) rather than after a guessed delay.
func AwaitJournal(t testing.TB, st JournalReader, runID string, n int) {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		entries, err := st.ReadJournal(context.Background(), runID)
		if err == nil && len(entries) >= n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("run %s's journal has %d entries (%v), want %d", runID, len(entries), err, n)
		}
	}
}
