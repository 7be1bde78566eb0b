package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/commonly/runtime/shared/runs"
	"github.com/commonly/runtime/shared/tablekeys"
	"github.com/commonly/runtime/shared/turns"
)

// GetRun reads a run.
func (d *Dynamo) GetRun(ctx context.Context, runID string) (*runs.Run, error) {
	item, err := d.getItem(ctx, d.tables.Runs, runKey(runID))
	if err != nil {
		return nil, fmt.Errorf("get run %s: %w", runID, err)
	}
	return decodeRun(runID, item)
}

func decodeRun(runID string, item map[string]types.AttributeValue) (*runs.Run, error) {
	if len(item) == 0 {
		return nil, fmt.Errorf("run %q: %w", runID, turns.ErrNotFound)
	}
	var r runs.Run
	if err := attributevalue.UnmarshalMap(item, &r); err != nil {
		return nil, fmt.Errorf("decode run %s: %w", runID, err)
	}
	if r.Steps == nil {
		r.Steps = []runs.Step{}
	}
	if v, ok := item[attrEvents].(*types.AttributeValueMemberS); ok {
		evs, err := runs.DecodeEvents(v.Value)
		if err != nil {
			return nil, fmt.Errorf("decode run %s: %w", runID, err)
		}
		r.Events = evs
	}
	return &r, nil
}

// ClaimRun moves a queued run to running, so that a retried dispatch
// never runs a turn twice, and only within turns.ClaimWindow of its
// admission, so that no turn starts once the reaper may close its run
// (turns.InterruptAfter). A run admitted before the open index existed
// (no openSince) is claimed whatever its age.
func (d *Dynamo) ClaimRun(ctx context.Context, runID string, at time.Time) (*runs.Run, error) {
	out, err := d.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                aws.String(d.tables.Runs),
		Key:                      runKey(runID),
		UpdateExpression:         aws.String("SET #s = :running, #at = :at"),
		ConditionExpression:      aws.String("#s = :queued AND (attribute_not_exists(#since) OR #since >= :oldest)"),
		ExpressionAttributeNames: map[string]string{"#s": "status", "#at": "startedAt", "#since": tablekeys.OpenSK},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":running": str(string(runs.StatusRunning)), ":queued": str(string(runs.StatusQueued)), ":at": encodeTime(at),
			":oldest": str(tablekeys.OpenSort(at.Add(-turns.ClaimWindow))),
		},
		ReturnValues:                        types.ReturnValueAllNew,
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	})
	if ccf, ok := isConditionFailed(err); ok {
		// The current run, as the server returned it or else read.
		var cur *runs.Run
		var cerr error
		if len(ccf.Item) == 0 {
			cur, cerr = d.GetRun(ctx, runID)
		} else {
			cur, cerr = decodeRun(runID, ccf.Item)
		}
		if cerr != nil {
			return nil, cerr
		}
		return cur, fmt.Errorf("claim %s (status %s): %w", runID, cur.Status, turns.ErrNotClaimable)
	}
	if err != nil {
		return nil, fmt.Errorf("claim run %s: %w", runID, err)
	}
	return decodeRun(runID, out.Attributes)
}

// CheckpointRun saves a running run whole, only while it is running.
func (d *Dynamo) CheckpointRun(ctx context.Context, r *runs.Run) error {
	item, err := d.marshalRun(r)
	if err != nil {
		return err
	}
	_, err = d.db.PutItem(ctx, &dynamodb.PutItemInput{
		TableName:                 aws.String(d.tables.Runs),
		Item:                      item,
		ConditionExpression:       aws.String("#s = :running"),
		ExpressionAttributeNames:  map[string]string{"#s": "status"},
		ExpressionAttributeValues: map[string]types.AttributeValue{":running": str(string(runs.StatusRunning))},
	})
	if _, ok := isConditionFailed(err); ok {
		return fmt.Errorf("checkpoint %s: %w", r.RunID, turns.ErrAlreadyFinal)
	}
	if err != nil {
		return fmt.Errorf("checkpoint run %s: %w", r.RunID, err)
	}
	return nil
}

// FinishRun writes the final run, only while it is not final yet, and
// refunds the turn to the user's day in the same transaction if asked:
// the run's condition makes the refund happen at most once. The run's
// cost is not added to the day's ledger here: the alarm function's
// ledger counts it from the runs table's stream, whoever wrote the run.
// A run with a reservation (a spend cap) settles it in the same
// transaction (settleUpdate), at most once for the same reason; a run
// without one is one PutItem, as it always was, unless refunded.
func (d *Dynamo) FinishRun(ctx context.Context, r *runs.Run, refund bool) error {
	if !r.Status.Final() {
		return fmt.Errorf("finish run %s: status %q is not final", r.RunID, r.Status)
	}
	var settle *types.Update
	if r.ReservedMicros > 0 {
		settle = d.settleUpdate(r, refund)
	}
	item, err := d.marshalRun(r)
	if err != nil {
		return err
	}
	put := &types.Put{
		TableName:                 aws.String(d.tables.Runs),
		Item:                      item,
		ConditionExpression:       aws.String("#s = :queued OR #s = :running"),
		ExpressionAttributeNames:  map[string]string{"#s": "status"},
		ExpressionAttributeValues: map[string]types.AttributeValue{":queued": str(string(runs.StatusQueued)), ":running": str(string(runs.StatusRunning))},
	}
	if !refund && settle == nil {
		_, err = d.db.PutItem(ctx, &dynamodb.PutItemInput{
			TableName: put.TableName, Item: put.Item, ConditionExpression: put.ConditionExpression,
			ExpressionAttributeNames: put.ExpressionAttributeNames, ExpressionAttributeValues: put.ExpressionAttributeValues,
		})
		if _, ok := isConditionFailed(err); ok {
			return fmt.Errorf("finish %s: %w", r.RunID, turns.ErrAlreadyFinal)
		}
		if err != nil {
			return fmt.Errorf("finish run %s: %w", r.RunID, err)
		}
		return nil
	}
	if settle == nil {
		settle = &types.Update{
			TableName:                 aws.String(d.tables.State),
			Key:                       stateKey(tablekeys.UsageOnDay(r.UserID, r.Day)),
			UpdateExpression:          aws.String("ADD #t :minus"),
			ExpressionAttributeNames:  map[string]string{"#t": attrTurns},
			ExpressionAttributeValues: map[string]types.AttributeValue{":minus": num(-1)},
		}
	}
	err = d.transact(ctx, []types.TransactWriteItem{{Put: put}, {Update: settle}})
	var tce *types.TransactionCanceledException
	if errors.As(err, &tce) && failedCondition(tce.CancellationReasons, 0) {
		return fmt.Errorf("finish %s: %w", r.RunID, turns.ErrAlreadyFinal)
	}
	if err != nil {
		return fmt.Errorf("finish run %s: %w", r.RunID, err)
	}
	return nil
}
