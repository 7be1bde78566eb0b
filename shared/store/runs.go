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

	"github.com/commonly/runtime/shared/keys"
	"github.com/commonly/runtime/shared/runs"
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
	return &r, nil
}

// ClaimRun moves a queued run to running, so that a retried dispatch
// never runs a turn twice.
func (d *Dynamo) ClaimRun(ctx context.Context, runID string, at time.Time) (*runs.Run, error) {
	out, err := d.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                           aws.String(d.tables.Runs),
		Key:                                 runKey(runID),
		UpdateExpression:                    aws.String("SET #s = :running, #at = :at"),
		ConditionExpression:                 aws.String("#s = :queued"),
		ExpressionAttributeNames:            map[string]string{"#s": "status", "#at": "startedAt"},
		ExpressionAttributeValues:           map[string]types.AttributeValue{":running": str(string(runs.StatusRunning)), ":queued": str(string(runs.StatusQueued)), ":at": encodeTime(at)},
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
	item, err := marshalRun(r)
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

// FinishRun writes the final run and, in the same transaction, charges its
// cost to the day it was admitted on and refunds the turn if asked. The
// run's condition (not yet final) makes both happen at most once.
func (d *Dynamo) FinishRun(ctx context.Context, r *runs.Run, refund bool) error {
	if !r.Status.Final() {
		return fmt.Errorf("finish run %s: status %q is not final", r.RunID, r.Status)
	}
	item, err := marshalRun(r)
	if err != nil {
		return err
	}
	put := types.TransactWriteItem{Put: &types.Put{
		TableName:                 aws.String(d.tables.Runs),
		Item:                      item,
		ConditionExpression:       aws.String("#s = :queued OR #s = :running"),
		ExpressionAttributeNames:  map[string]string{"#s": "status"},
		ExpressionAttributeValues: map[string]types.AttributeValue{":queued": str(string(runs.StatusQueued)), ":running": str(string(runs.StatusRunning))},
	}}
	items := []types.TransactWriteItem{put}
	if r.CostMicros != 0 || refund {
		expr := "ADD #c :c"
		names := map[string]string{"#c": attrCost}
		values := map[string]types.AttributeValue{":c": num(int64(r.CostMicros))}
		if refund {
			expr += ", #t :minus"
			names["#t"] = attrTurns
			values[":minus"] = num(-1)
		}
		items = append(items, types.TransactWriteItem{Update: &types.Update{
			TableName:                 aws.String(d.tables.State),
			Key:                       stateKey(keys.UsageOnDay(r.UserID, r.Day)),
			UpdateExpression:          aws.String(expr),
			ExpressionAttributeNames:  names,
			ExpressionAttributeValues: values,
		}})
	}
	err = d.transact(ctx, items)
	var tce *types.TransactionCanceledException
	if errors.As(err, &tce) && failedCondition(tce.CancellationReasons, 0) {
		return fmt.Errorf("finish %s: %w", r.RunID, turns.ErrAlreadyFinal)
	}
	if err != nil {
		return fmt.Errorf("finish run %s: %w", r.RunID, err)
	}
	return nil
}
