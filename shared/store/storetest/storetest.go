// Package storetest reads what the store wrote, for the tests of the
// packages that write through it (the store, the reaper, the local
// stack): an item read through the SDK on the key schema, as an operator
// would, so that the store exports no read only tests call.
package storetest

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/commonly/runtime/shared/sandbox"
	"github.com/commonly/runtime/shared/tablekeys"
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
