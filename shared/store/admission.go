package store

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/commonly/runtime/shared/tablekeys"
	"github.com/commonly/runtime/shared/turns"
)

// Attributes of the daily usage item.
const (
	attrTurns = "turns"
	attrCost  = "costMicros"
	// With a spend cap (reservation.go): the reservations of the day's
	// turns in flight, the cost their final writes charged, and the sum
	// of the two, the one number the admission's condition can compare
	// (a condition expression has no arithmetic).
	attrReserved     = "reservedMicros"
	attrCapCommitted = "capCommittedMicros"
	attrCapHeld      = "capHeldMicros"
)

// Admit counts the turn and creates its run in one transaction:
//
//  0. the idempotency record (when a key was given), only if new;
//  1. a check that the user's plan is still the admission's plan;
//  2. ADD 1 to the user's day counter, only if it is below the limit
//     and, with a spend cap, only if the day's cost (the alarm
//     function's ledger total on the same item) is below the cap;
//  3. the run, only if new.
//
// Under any concurrency DynamoDB serialises the counter's condition, so
// exactly `limit` turns are admitted a day, and the plan check makes that
// limit the plan's at the moment of the write. The idempotency record
// comes first so a replay is recognised even at the ceiling.
func (d *Dynamo) Admit(ctx context.Context, a turns.Admission) (turns.AdmitResult, error) {
	if _, err := turns.ParsePlan(string(a.Plan)); err != nil {
		return turns.AdmitResult{}, fmt.Errorf("admit: %w", err)
	}
	if a.SpendCap > 0 {
		return d.admitReserving(ctx, a)
	}
	a.Run.ReservedMicros = 0
	res, c, err := d.admitOnce(ctx, a)
	if err != nil || c == nil {
		return res, err
	}
	usage, err := d.usageOf(ctx, a, c)
	if err != nil {
		return turns.AdmitResult{}, err
	}
	return refusedAtCeiling(a, usage), nil
}

// admitOnce is one admission transaction. With a spend cap it reserves
// a.Run.ReservedMicros. When the counter's condition failed it returns
// the usage item as the transaction saw it (possibly empty) and a nil
// error, for the caller to say which bound refused the turn.
func (d *Dynamo) admitOnce(ctx context.Context, a turns.Admission) (turns.AdmitResult, *counterRefusal, error) {
	runItem, err := d.marshalRun(a.Run)
	if err != nil {
		return turns.AdmitResult{}, nil, err
	}
	var items []types.TransactWriteItem
	idemIdx := -1
	if a.IdempotencyKey != "" {
		idem := stateKey(tablekeys.Idempotency(a.CallerID, a.Run.InstallID, a.IdempotencyKey))
		idem["runId"], idem["requestHash"] = str(a.Run.RunID), str(a.Run.RequestHash)
		// The TTL attribute: DynamoDB deletes the record some time after it
		// passes, and the condition below lets an expired key be reused before.
		idem[tablekeys.TTL] = num(a.Now.Add(d.idempotencyTTL).Unix())
		idemIdx = len(items)
		items = append(items, types.TransactWriteItem{Put: &types.Put{
			TableName:                           aws.String(d.tables.State),
			Item:                                idem,
			ConditionExpression:                 aws.String("attribute_not_exists(#pk) OR #exp < :now"),
			ExpressionAttributeNames:            map[string]string{"#pk": tablekeys.PK, "#exp": tablekeys.TTL},
			ExpressionAttributeValues:           map[string]types.AttributeValue{":now": num(a.Now.Unix())},
			ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
		}})
	}
	planIdx := len(items)
	planCond, planValues := planCondition(a.Plan)
	items = append(items, types.TransactWriteItem{ConditionCheck: &types.ConditionCheck{
		TableName:                 aws.String(d.tables.State),
		Key:                       stateKey(tablekeys.Plan(a.Run.UserID)),
		ConditionExpression:       aws.String(planCond),
		ExpressionAttributeNames:  map[string]string{"#plan": attrPlan},
		ExpressionAttributeValues: planValues,
	}})
	counterIdx := len(items)
	cond := "(attribute_not_exists(#t) OR #t < :limit)"
	names := map[string]string{"#t": attrTurns, "#u": "userId", "#d": "day", "#ttl": tablekeys.TTL}
	values := map[string]types.AttributeValue{":one": num(1), ":limit": num(a.Limit), ":user": str(a.Run.UserID), ":day": str(a.Run.Day), ":ttl": num(tablekeys.ExpiresAfterDay(a.Run.CreatedAt))}
	update := "ADD #t :one SET #u = :user, #d = :day, #ttl = :ttl"
	if a.SpendCap > 0 {
		cond += " AND (attribute_not_exists(#c) OR #c < :cap)"
		names["#c"], values[":cap"] = attrCost, num(int64(a.SpendCap))
		// The reservation, only if it fits under the cap with what the
		// day already holds: held + R <= cap, written held <= cap - R.
		r := int64(a.Run.ReservedMicros)
		cond += " AND (attribute_not_exists(#h) OR #h <= :room)"
		update = "ADD #t :one, #r :res, #h :res SET #u = :user, #d = :day, #ttl = :ttl"
		names["#h"], names["#r"] = attrCapHeld, attrReserved
		values[":room"], values[":res"] = num(int64(a.SpendCap)-r), num(r)
	}
	items = append(items, types.TransactWriteItem{Update: &types.Update{
		TableName:                 aws.String(d.tables.State),
		Key:                       stateKey(tablekeys.UsageOnDay(a.Run.UserID, a.Run.Day)),
		UpdateExpression:          aws.String(update),
		ConditionExpression:       aws.String(cond),
		ExpressionAttributeNames:  names,
		ExpressionAttributeValues: values,
		// The current count and cost tell a refused caller which bound it
		// met and how much was used.
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	}})
	items = append(items, types.TransactWriteItem{Put: &types.Put{
		TableName:                aws.String(d.tables.Runs),
		Item:                     runItem,
		ConditionExpression:      aws.String("attribute_not_exists(#id)"),
		ExpressionAttributeNames: map[string]string{"#id": tablekeys.RunID},
	}})

	err = d.transact(ctx, items)
	if err == nil {
		return turns.AdmitResult{Admitted: true}, nil, nil
	}
	var tce *types.TransactionCanceledException
	if !errors.As(err, &tce) {
		return turns.AdmitResult{}, nil, fmt.Errorf("admit transaction: %w", err)
	}
	reasons := tce.CancellationReasons
	if idemIdx >= 0 && failedCondition(reasons, idemIdx) {
		res, err := d.replay(ctx, a, reasons[idemIdx].Item)
		return res, nil, err
	}
	if failedCondition(reasons, planIdx) {
		// Before the counter: its condition was checked against the limit
		// of a plan the user no longer has.
		return turns.AdmitResult{PlanChanged: true}, nil, nil
	}
	if failedCondition(reasons, counterIdx) {
		return turns.AdmitResult{}, &counterRefusal{usage: reasons[counterIdx].Item}, nil
	}
	return turns.AdmitResult{}, nil, fmt.Errorf("admit transaction cancelled (%s): %w", reasonCodes(reasons), turns.ErrUnavailable)
}

// counterRefusal is the usage item as a transaction refused by the
// counter's condition saw it; empty when the server did not return it.
type counterRefusal struct {
	usage map[string]types.AttributeValue
}

// refusedAtCeiling is the ceiling's refusal, from the day's usage item.
func refusedAtCeiling(a turns.Admission, usage map[string]types.AttributeValue) turns.AdmitResult {
	used := numAttr(usage, attrTurns)
	if used == 0 {
		used = a.Limit
	}
	return turns.AdmitResult{CeilingUsed: used}
}

// usageOf is the day's usage item as the refused transaction returned
// it or, if it did not, as read now: a refusal, not a turn, pays for the
// read.
func (d *Dynamo) usageOf(ctx context.Context, a turns.Admission, c *counterRefusal) (map[string]types.AttributeValue, error) {
	if c != nil && len(c.usage) > 0 {
		return c.usage, nil
	}
	item, err := d.getItem(ctx, d.tables.State, stateKey(tablekeys.UsageOnDay(a.Run.UserID, a.Run.Day)))
	if err != nil {
		return nil, fmt.Errorf("read usage of a refused turn: %w", err)
	}
	return item, nil
}

// planCondition is the condition under which a user's plan item decodes
// to p (decodePlan): for a paid plan its value is p; for free the item or
// its value is missing, or the value is no paid plan.
func planCondition(p turns.Plan) (string, map[string]types.AttributeValue) {
	if p != turns.PlanFree {
		return "#plan = :plan", map[string]types.AttributeValue{":plan": str(string(p))}
	}
	values := map[string]types.AttributeValue{}
	var paid []string
	for i, q := range turns.AllPlans() {
		if q == turns.PlanFree {
			continue
		}
		name := fmt.Sprintf(":paid%d", i)
		values[name] = str(string(q))
		paid = append(paid, "#plan <> "+name)
	}
	return "attribute_not_exists(#plan) OR (" + strings.Join(paid, " AND ") + ")", values
}

func (d *Dynamo) replay(ctx context.Context, a turns.Admission, old map[string]types.AttributeValue) (turns.AdmitResult, error) {
	if strAttr(old, "runId") == "" {
		// The server did not return the old item: read it.
		item, err := d.getItem(ctx, d.tables.State, stateKey(tablekeys.Idempotency(a.CallerID, a.Run.InstallID, a.IdempotencyKey)))
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
