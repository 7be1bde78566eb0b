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
// same sequence. Only while the run is running: once final, its events
// are the final write's.
func (d *Dynamo) SaveRunEvents(ctx context.Context, runID string, events []runs.StoredEvent) error {
	_, err := d.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                aws.String(d.tables.Runs),
		Key:                      runKey(runID),
		UpdateExpression:         aws.String("SET #e = :e"),
		ConditionExpression:      aws.String("#s = :running"),
		ExpressionAttributeNames: map[string]string{"#e": attrEvents, "#s": "status"},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":e": str(runs.EncodeEvents(events)), ":running": str(string(runs.StatusRunning)),
		},
	})
	if _, ok := isConditionFailed(err); ok {
		return fmt.Errorf("save events of %s: %w", runID, turns.ErrAlreadyFinal)
	}
	if err != nil {
		return fmt.Errorf("save events of run %s: %w", runID, err)
	}
	return nil
}
