package turnstack

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/commonly/runtime/shared/keys"
	"github.com/commonly/runtime/shared/store"
)

// Forgetter deletes a finished turn's run and idempotency record, through
// its own client (not the counted one), between measured turns.
//
// Why: the embedded DynamoDB (minidyn) copies every table a transaction
// touches, so its cost grows with each stored run, which DynamoDB's does
// not. Keeping the tables at a constant size keeps the measurement of a
// turn independent of how many turns ran before it.
type Forgetter struct {
	DB     *dynamodb.Client
	Tables store.Tables
}

// Forget deletes the turn's records in one BatchWriteItem.
func (f Forgetter) Forget(ctx context.Context, d Done) error {
	idem := keys.Idempotency(UserID, InstallID, d.IdempotencyKey)
	out, err := f.DB.BatchWriteItem(ctx, &dynamodb.BatchWriteItemInput{RequestItems: map[string][]types.WriteRequest{
		f.Tables.Runs: {{DeleteRequest: &types.DeleteRequest{Key: map[string]types.AttributeValue{
			keys.RunID: &types.AttributeValueMemberS{Value: d.RunID},
		}}}},
		f.Tables.State: {{DeleteRequest: &types.DeleteRequest{Key: map[string]types.AttributeValue{
			keys.PK: &types.AttributeValueMemberS{Value: idem.PK}, keys.SK: &types.AttributeValueMemberS{Value: idem.SK},
		}}}},
	}})
	if err != nil {
		return fmt.Errorf("forget run %s: %w", d.RunID, err)
	}
	if len(out.UnprocessedItems) > 0 {
		return fmt.Errorf("forget run %s: unprocessed items", d.RunID)
	}
	return nil
}
