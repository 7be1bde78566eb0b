package store

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/commonly/runtime/shared/runs"
	"github.com/commonly/runtime/shared/turns"
)

var _ turns.EventWriter = (*Dynamo)(nil)

// attrEvents is the run item's attribute of its events (runs.EncodeEvents).
const attrEvents = "events"

// SaveRunEvents replaces a running run's events (the attribute its
// checkpoints and final write also carry) with a longer prefix of the
// same sequence and renews its lease, only while attempt holds it:
// ErrLeaseLost once another attempt took it over, ErrAlreadyFinal once
// it is final (its events are then the final write's).
func (d *Dynamo) SaveRunEvents(ctx context.Context, runID string, attempt int, l runs.Lease, events []runs.StoredEvent) error {
	names := heldNames(map[string]string{"#e": attrEvents})
	values := heldValues(attempt, map[string]types.AttributeValue{":e": str(runs.EncodeEvents(events))})
	set := leaseUpdate(l, attempt, names, values)
	_, err := d.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                           aws.String(d.tables.Runs),
		Key:                                 runKey(runID),
		UpdateExpression:                    aws.String("SET #e = :e, " + set),
		ConditionExpression:                 aws.String(heldBy),
		ExpressionAttributeNames:            names,
		ExpressionAttributeValues:           values,
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	})
	if ccf, ok := isConditionFailed(err); ok {
		return d.refused(ctx, runID, attempt, ccf.Item, "save the events of")
	}
	if err != nil {
		return fmt.Errorf("save events of run %s: %w", runID, err)
	}
	return nil
}
