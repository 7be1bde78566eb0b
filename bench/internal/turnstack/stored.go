package turnstack

import (
	"context"
	"fmt"
	"maps"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/commonly/runtime/shared/store"
	"github.com/commonly/runtime/shared/tablekeys"
)

// StoreCopies stores n copies of a finished turn's records, its run and
// its idempotency record under new keys, as if n more turns had run
// before: the benchmark measures a turn with that much stored
// (BenchmarkTurnStoredRuns). It writes through db, not the counted client.
func StoreCopies(ctx context.Context, db *dynamodb.Client, tables store.Tables, d Done, n int) error {
	idem := tablekeys.Idempotency(UserID, InstallID, d.IdempotencyKey)
	runItem, err := db.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(tables.Runs),
		Key: map[string]types.AttributeValue{tablekeys.RunID: &types.AttributeValueMemberS{Value: d.RunID}}})
	if err != nil || runItem.Item == nil {
		return fmt.Errorf("read run %s: %v", d.RunID, err)
	}
	idemItem, err := db.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(tables.State), Key: map[string]types.AttributeValue{
		tablekeys.PK: &types.AttributeValueMemberS{Value: idem.PK}, tablekeys.SK: &types.AttributeValueMemberS{Value: idem.SK}}})
	if err != nil || idemItem.Item == nil {
		return fmt.Errorf("read the idempotency record of run %s: %v", d.RunID, err)
	}
	const perBatch = 12 // two items a copy, at most 25 a BatchWriteItem
	for start := 0; start < n; start += perBatch {
		var runReqs, stateReqs []types.WriteRequest
		for i := start; i < min(start+perBatch, n); i++ {
			id := fmt.Sprintf("%s-copy-%d", d.RunID, i)
			r := copyItem(runItem.Item, tablekeys.RunID, id)
			e := copyItem(idemItem.Item, tablekeys.PK, tablekeys.Idempotency(UserID, InstallID, id).PK)
			e[tablekeys.RunID] = &types.AttributeValueMemberS{Value: id}
			runReqs = append(runReqs, types.WriteRequest{PutRequest: &types.PutRequest{Item: r}})
			stateReqs = append(stateReqs, types.WriteRequest{PutRequest: &types.PutRequest{Item: e}})
		}
		out, err := db.BatchWriteItem(ctx, &dynamodb.BatchWriteItemInput{RequestItems: map[string][]types.WriteRequest{
			tables.Runs: runReqs, tables.State: stateReqs,
		}})
		if err != nil {
			return fmt.Errorf("store copies: %w", err)
		}
		if len(out.UnprocessedItems) > 0 {
			return fmt.Errorf("store copies: unprocessed items")
		}
	}
	return nil
}

// copyItem is item with attr set to the string v (the values are shared:
// the SDK only reads them).
func copyItem(item map[string]types.AttributeValue, attr, v string) map[string]types.AttributeValue {
	out := maps.Clone(item)
	out[attr] = &types.AttributeValueMemberS{Value: v}
	return out
}
