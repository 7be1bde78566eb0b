package store

import (
	"context"
	"errors"
	"fmt"

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
	r.Lease = decodeLease(item)
	if v, ok := item[attrEvents].(*types.AttributeValueMemberS); ok {
		evs, err := runs.DecodeEvents(v.Value)
		if err != nil {
			return nil, fmt.Errorf("decode run %s: %w", runID, err)
		}
		r.Events = evs
	}
	return &r, nil
}

// CheckpointRun saves a running run whole, with the journal entries
// appended since its last write, in one write, only while the run's
// attempt (r.Attempts) holds it: ErrLeaseLost once another attempt took
// it over, ErrAlreadyFinal once it is final. It renews the lease (the
// run's Lease, as its writer stamped it). Without entries it is one
// PutItem; with them, one transaction.
func (d *Dynamo) CheckpointRun(ctx context.Context, r *runs.Run, journal []turns.JournalEntry) error {
	item, err := d.marshalRun(r)
	if err != nil {
		return err
	}
	names, values := heldNames(map[string]string{}), heldValues(r.Attempts, map[string]types.AttributeValue{})
	if len(journal) == 0 {
		_, err = d.db.PutItem(ctx, &dynamodb.PutItemInput{
			TableName: aws.String(d.tables.Runs), Item: item, ConditionExpression: aws.String(heldBy),
			ExpressionAttributeNames: names, ExpressionAttributeValues: values,
			ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
		})
		if ccf, ok := isConditionFailed(err); ok {
			return d.refused(ctx, r.RunID, r.Attempts, ccf.Item, "checkpoint")
		}
		if err != nil {
			return fmt.Errorf("checkpoint run %s: %w", r.RunID, err)
		}
		return nil
	}
	items := []types.TransactWriteItem{{Put: &types.Put{
		TableName: aws.String(d.tables.Runs), Item: item, ConditionExpression: aws.String(heldBy),
		ExpressionAttributeNames: names, ExpressionAttributeValues: values,
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	}}}
	entries, err := d.journalPuts(r, journal)
	if err != nil {
		return err
	}
	err = d.transact(ctx, append(items, entries...))
	if tce, ok := errors.AsType[*types.TransactionCanceledException](err); ok && failedCondition(tce.CancellationReasons, 0) {
		return d.refused(ctx, r.RunID, r.Attempts, tce.CancellationReasons[0].Item, "checkpoint")
	}
	if err != nil {
		return fmt.Errorf("checkpoint run %s with %d journal entries: %w", r.RunID, len(journal), err)
	}
	return nil
}

// FinishRun writes the final run, only while it is open under the
// attempt r carries (r.Attempts; none for a run never claimed), and
// refunds the turn to the user's day in the same transaction if asked:
// the run's condition makes the refund happen at most once. The run's
// cost is not added to the day's ledger here: the alarm function's
// ledger counts it from the runs table's stream, whoever wrote the run.
// A run with a reservation (a spend cap) settles it in the same
// transaction (settleUpdate), at most once for the same reason; a run
// without one is one PutItem, as it always was, unless refunded.
//
// A refused write is ErrAlreadyFinal (the run was final already) or
// ErrLeaseLost (another attempt holds it), unless the run it was refused
// by carries this write's own token: the write was applied and its
// response lost, so the SDK's retry of it was refused by its own effect,
// and it succeeded.
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
	closer := newToken()
	item[attrCloser] = str(closer)
	cond := "(#s = :queued OR #s = :running) AND "
	names := map[string]string{"#s": "status", "#att": attrAttempt}
	values := map[string]types.AttributeValue{":queued": str(string(runs.StatusQueued)), ":running": str(string(runs.StatusRunning))}
	if r.Attempts > 0 {
		cond += "#att = :att"
		values[":att"] = num(int64(r.Attempts))
	} else {
		cond += "attribute_not_exists(#att)"
	}
	put := &types.Put{
		TableName: aws.String(d.tables.Runs), Item: item, ConditionExpression: aws.String(cond),
		ExpressionAttributeNames: names, ExpressionAttributeValues: values,
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	}
	var refusedBy map[string]types.AttributeValue
	if !refund && settle == nil {
		_, err = d.db.PutItem(ctx, &dynamodb.PutItemInput{
			TableName: put.TableName, Item: put.Item, ConditionExpression: put.ConditionExpression,
			ExpressionAttributeNames: put.ExpressionAttributeNames, ExpressionAttributeValues: put.ExpressionAttributeValues,
			ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
		})
		ccf, ok := isConditionFailed(err)
		if !ok {
			if err != nil {
				return fmt.Errorf("finish run %s: %w", r.RunID, err)
			}
			return nil
		}
		refusedBy = ccf.Item
	} else {
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
		tce, ok := errors.AsType[*types.TransactionCanceledException](err)
		if !ok || !failedCondition(tce.CancellationReasons, 0) {
			if err != nil {
				return fmt.Errorf("finish run %s: %w", r.RunID, err)
			}
			return nil
		}
		refusedBy = tce.CancellationReasons[0].Item
	}
	if len(refusedBy) == 0 {
		if refusedBy, err = d.getItem(ctx, d.tables.Runs, runKey(r.RunID)); err != nil {
			return fmt.Errorf("finish run %s: read it back: %w", r.RunID, err)
		}
	}
	if strAttr(refusedBy, attrCloser) == closer {
		return nil
	}
	cur, err := decodeRun(r.RunID, refusedBy)
	if err != nil {
		return err
	}
	return refusal(r.RunID, r.Attempts, cur, "finish")
}

// LookRun reads what a worker looks for through a silence (turns'
// runWriter): the run's status, attempt and stop request, projected,
// strongly consistent. The run whole may near 400 KB, its events
// decoded; the look needs three attributes a second.
func (d *Dynamo) LookRun(ctx context.Context, runID string) (*runs.Run, error) {
	out, err := d.db.GetItem(ctx, &dynamodb.GetItemInput{
		TableName: aws.String(d.tables.Runs), Key: runKey(runID), ConsistentRead: aws.Bool(true),
		ProjectionExpression:     aws.String("#s, #att, #cancel"),
		ExpressionAttributeNames: heldNames(map[string]string{}),
	})
	if err != nil {
		return nil, fmt.Errorf("look at run %s: %w", runID, err)
	}
	if len(out.Item) == 0 {
		return nil, fmt.Errorf("run %q: %w", runID, turns.ErrNotFound)
	}
	var r runs.Run
	if err := attributevalue.UnmarshalMap(out.Item, &r); err != nil {
		return nil, fmt.Errorf("decode run %s: %w", runID, err)
	}
	r.RunID = runID
	return &r, nil
}
