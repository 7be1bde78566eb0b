package store

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/commonly/runtime/shared/keys"
	"github.com/commonly/runtime/shared/plans"
	"github.com/commonly/runtime/shared/runs"
	"github.com/commonly/runtime/shared/turns"
)

// Attributes of the daily usage item.
const (
	attrTurns = "turns"
	attrCost  = "costMicros"
)

// maxConflictRetries bounds retries of a transaction cancelled by a
// concurrent transaction on the same counter. Past it the turn is refused
// (fail closed) rather than admitted unchecked.
const maxConflictRetries = 12

// Admit counts the turn and creates its run in one transaction:
//
//  0. the idempotency record (when a key was given), only if new;
//  1. a check that the user's plan is still the admission's plan;
//  2. ADD 1 to the user's day counter, only if it is below the limit;
//  3. the run, only if new.
//
// Under any concurrency DynamoDB serialises the counter's condition, so
// exactly `limit` turns are admitted a day, and the plan check makes that
// limit the plan's at the moment of the write. The idempotency record
// comes first so a replay is recognised even at the ceiling.
func (d *Dynamo) Admit(ctx context.Context, a turns.Admission) (turns.AdmitResult, error) {
	if _, err := plans.Parse(string(a.Plan)); err != nil {
		return turns.AdmitResult{}, fmt.Errorf("admit: %w", err)
	}
	runItem, err := marshalRun(a.Run)
	if err != nil {
		return turns.AdmitResult{}, err
	}
	var items []types.TransactWriteItem
	idemIdx := -1
	if a.IdempotencyKey != "" {
		idem := stateKey(keys.Idempotency(a.CallerID, a.Run.InstallID, a.IdempotencyKey))
		idem["runId"], idem["requestHash"] = str(a.Run.RunID), str(a.Run.RequestHash)
		// The TTL attribute: DynamoDB deletes the record some time after it
		// passes, and the condition below lets an expired key be reused before.
		idem[keys.TTL] = num(a.Now.Add(d.IdempotencyTTL).Unix())
		idemIdx = len(items)
		items = append(items, types.TransactWriteItem{Put: &types.Put{
			TableName:                           aws.String(d.tables.State),
			Item:                                idem,
			ConditionExpression:                 aws.String("attribute_not_exists(#pk) OR #exp < :now"),
			ExpressionAttributeNames:            map[string]string{"#pk": keys.PK, "#exp": keys.TTL},
			ExpressionAttributeValues:           map[string]types.AttributeValue{":now": num(a.Now.Unix())},
			ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
		}})
	}
	planIdx := len(items)
	planCond, planValues := planCondition(a.Plan)
	items = append(items, types.TransactWriteItem{ConditionCheck: &types.ConditionCheck{
		TableName:                 aws.String(d.tables.State),
		Key:                       stateKey(keys.Plan(a.Run.UserID)),
		ConditionExpression:       aws.String(planCond),
		ExpressionAttributeNames:  map[string]string{"#plan": attrPlan},
		ExpressionAttributeValues: planValues,
	}})
	counterIdx := len(items)
	items = append(items, types.TransactWriteItem{Update: &types.Update{
		TableName:                 aws.String(d.tables.State),
		Key:                       stateKey(keys.UsageOnDay(a.Run.UserID, a.Run.Day)),
		UpdateExpression:          aws.String("ADD #t :one SET #u = :user, #d = :day, #ttl = :ttl"),
		ConditionExpression:       aws.String("attribute_not_exists(#t) OR #t < :limit"),
		ExpressionAttributeNames:  map[string]string{"#t": attrTurns, "#u": "userId", "#d": "day", "#ttl": keys.TTL},
		ExpressionAttributeValues: map[string]types.AttributeValue{":one": num(1), ":limit": num(a.Limit), ":user": str(a.Run.UserID), ":day": str(a.Run.Day), ":ttl": num(keys.ExpiresAfterDay(a.Run.CreatedAt))},
		// The current count tells a refused caller how much was used.
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	}})
	items = append(items, types.TransactWriteItem{Put: &types.Put{
		TableName:                aws.String(d.tables.Runs),
		Item:                     runItem,
		ConditionExpression:      aws.String("attribute_not_exists(#id)"),
		ExpressionAttributeNames: map[string]string{"#id": keys.RunID},
	}})

	err = d.transact(ctx, items)
	if err == nil {
		return turns.AdmitResult{Admitted: true}, nil
	}
	var tce *types.TransactionCanceledException
	if !errors.As(err, &tce) {
		return turns.AdmitResult{}, fmt.Errorf("admit transaction: %w", err)
	}
	reasons := tce.CancellationReasons
	if idemIdx >= 0 && failedCondition(reasons, idemIdx) {
		return d.replay(ctx, a, reasons[idemIdx].Item)
	}
	if failedCondition(reasons, planIdx) {
		// Before the counter: its condition was checked against the limit
		// of a plan the user no longer has.
		return turns.AdmitResult{PlanChanged: true}, nil
	}
	if failedCondition(reasons, counterIdx) {
		used := numAttr(reasons[counterIdx].Item, attrTurns)
		if used == 0 {
			used = a.Limit
		}
		return turns.AdmitResult{CeilingUsed: used}, nil
	}
	return turns.AdmitResult{}, fmt.Errorf("admit transaction cancelled (%s): %w", reasonCodes(reasons), turns.ErrUnavailable)
}

// planCondition is the condition under which a user's plan item decodes
// to p (decodePlan): for a paid plan its value is p; for free the item or
// its value is missing, or the value is no paid plan.
func planCondition(p plans.Plan) (string, map[string]types.AttributeValue) {
	if p != plans.Free {
		return "#plan = :plan", map[string]types.AttributeValue{":plan": str(string(p))}
	}
	values := map[string]types.AttributeValue{}
	var paid []string
	for i, q := range plans.All() {
		if q == plans.Free {
			continue
		}
		name := fmt.Sprintf(":paid%d", i)
		values[name] = str(string(q))
		paid = append(paid, "#plan <> "+name)
	}
	return "attribute_not_exists(#plan) OR (" + strings.Join(paid, " AND ") + ")", values
}

// transact runs a transaction, retrying it while it is cancelled only by
// concurrent transactions on the same items. Other cancellations are
// returned as they are.
func (d *Dynamo) transact(ctx context.Context, items []types.TransactWriteItem) error {
	return d.retryConflicts(ctx, func() error {
		_, err := d.db.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: items})
		return err
	}, func(err error) bool {
		var tce *types.TransactionCanceledException
		return errors.As(err, &tce) && conflict(tce.CancellationReasons) && !anyConditionFailed(tce.CancellationReasons)
	})
}

// retryConflicts runs write until it succeeds or fails for a reason busy
// does not claim: a concurrent transaction on the same items, which
// DynamoDB does not retry itself. Between tries it waits with full
// jitter, so that concurrent writers of one user spread out; past
// maxConflictRetries it gives up as unavailable.
func (d *Dynamo) retryConflicts(ctx context.Context, write func() error, busy func(error) bool) error {
	for attempt := 0; ; attempt++ {
		err := write()
		if err == nil || !busy(err) {
			return err
		}
		if attempt >= maxConflictRetries {
			return fmt.Errorf("transaction conflicts after %d attempts: %w", attempt+1, turns.ErrUnavailable)
		}
		d.sleep(time.Duration(rand.Int64N(int64(5*time.Millisecond) << min(attempt, 6))))
		if err := ctx.Err(); err != nil {
			return err
		}
	}
}

func anyConditionFailed(reasons []types.CancellationReason) bool {
	for i := range reasons {
		if failedCondition(reasons, i) {
			return true
		}
	}
	return false
}

func (d *Dynamo) replay(ctx context.Context, a turns.Admission, old map[string]types.AttributeValue) (turns.AdmitResult, error) {
	if strAttr(old, "runId") == "" {
		// The server did not return the old item: read it.
		item, err := d.getItem(ctx, d.tables.State, stateKey(keys.Idempotency(a.CallerID, a.Run.InstallID, a.IdempotencyKey)))
		if err != nil {
			return turns.AdmitResult{}, fmt.Errorf("read idempotency record: %w", err)
		}
		old = item
	}
	if strAttr(old, "runId") == "" {
		return turns.AdmitResult{}, fmt.Errorf("idempotency record vanished: %w", turns.ErrUnavailable)
	}
	return turns.AdmitResult{ReplayOf: strAttr(old, "runId"), ReplayHash: strAttr(old, "requestHash")}, nil
}

func failedCondition(reasons []types.CancellationReason, i int) bool {
	return i < len(reasons) && aws.ToString(reasons[i].Code) == "ConditionalCheckFailed"
}

func conflict(reasons []types.CancellationReason) bool {
	for _, r := range reasons {
		switch aws.ToString(r.Code) {
		case "TransactionConflict", "ThrottlingError", "ProvisionedThroughputExceeded":
			return true
		}
	}
	return false
}

func reasonCodes(reasons []types.CancellationReason) string {
	s := ""
	for i, r := range reasons {
		if i > 0 {
			s += ","
		}
		s += aws.ToString(r.Code)
	}
	return s
}

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
