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

	"github.com/commonly/runtime/shared/ledger"
	"github.com/commonly/runtime/shared/money"
	"github.com/commonly/runtime/shared/tablekeys"
	"github.com/commonly/runtime/shared/utcday"
)

// Attributes of the ledger item, and the alarm marker on the usage item.
const (
	attrRev         = "rev"
	attrAlarmID     = "spendAlarmId"
	attrAlarmRaised = "spendAlarmAt"
	maxBatchGetKeys = 100 // BatchGetItem's limit
)

var _ ledger.Store = (*Dynamo)(nil)

// ReadDays reads the ledger and usage items of the user-days, two keys a
// day, in as few consistent BatchGetItem calls as the limit of 100 keys
// allows (one for up to 50 user-days).
func (d *Dynamo) ReadDays(ctx context.Context, days []ledger.DayKey) (map[ledger.DayKey]ledger.Day, error) {
	ks := make([]tablekeys.Key, 0, 2*len(days))
	for _, day := range days {
		ks = append(ks, tablekeys.Ledger(day.UserID, day.Day), tablekeys.UsageOnDay(day.UserID, day.Day))
	}
	items := make(map[tablekeys.Key]map[string]types.AttributeValue, len(ks))
	for start := 0; start < len(ks); start += maxBatchGetKeys {
		got, err := d.batchGetState(ctx, ks[start:min(start+maxBatchGetKeys, len(ks))]...)
		if err != nil {
			return nil, fmt.Errorf("read ledgers: %w", err)
		}
		for k, item := range got {
			items[k] = item
		}
	}
	out := make(map[ledger.DayKey]ledger.Day, len(days))
	for _, day := range days {
		var book ledgerItem
		if err := attributevalue.UnmarshalMap(items[tablekeys.Ledger(day.UserID, day.Day)], &book); err != nil {
			return nil, fmt.Errorf("decode ledger of %s/%s: %w", day.UserID, day.Day, err)
		}
		usage := items[tablekeys.UsageOnDay(day.UserID, day.Day)]
		out[day] = ledger.Day{
			Book:    ledger.Book{Rev: book.Rev, CostMicros: book.CostMicros, Runs: book.Runs},
			Turns:   numAttr(usage, attrTurns),
			AlarmID: strAttr(usage, attrAlarmID),
		}
	}
	return out, nil
}

// ledgerItem is what ReadDays reads of the ledger item: its attributes
// besides its key and the report's (reportAttrs, which WriteDay adds).
type ledgerItem struct {
	UserID     string                    `dynamodbav:"userId"`
	Day        string                    `dynamodbav:"day"`
	Rev        int64                     `dynamodbav:"rev"`
	CostMicros money.Micros              `dynamodbav:"costMicros"`
	Runs       map[string]ledger.Counted `dynamodbav:"runs"`
	TTL        int64                     `dynamodbav:"ttl"`
}

// WriteDay replaces the ledger item, conditional on the revision read
// (or on there being none), and adds the delta to the usage item's
// costMicros in the same transaction; the usage item gets its day, user
// and TTL as the admission sets them. Without a delta the ledger alone is
// written, with a PutItem.
func (d *Dynamo) WriteDay(ctx context.Context, w ledger.Write) error {
	dayStart, err := time.Parse(utcday.Layout, w.Key.Day)
	if err != nil {
		return fmt.Errorf("write ledger: day %q: %w", w.Key.Day, err)
	}
	ttl := tablekeys.ExpiresAfterDay(dayStart)
	// attributevalue flattens the embedded structs: one item.
	item, err := withKey(struct {
		ledgerItem
		reportAttrs
	}{ledgerItem{
		UserID: w.Key.UserID, Day: w.Key.Day, Rev: w.Next.Rev,
		CostMicros: w.Next.CostMicros, Runs: w.Next.Runs, TTL: ttl,
	}, reportOf(w)}, tablekeys.Ledger(w.Key.UserID, w.Key.Day))
	if err != nil {
		return err
	}
	put := &types.Put{TableName: aws.String(d.tables.State), Item: item}
	if w.From == 0 {
		put.ConditionExpression = aws.String("attribute_not_exists(#pk)")
		put.ExpressionAttributeNames = map[string]string{"#pk": tablekeys.PK}
	} else {
		put.ConditionExpression = aws.String("#rev = :rev")
		put.ExpressionAttributeNames = map[string]string{"#rev": attrRev}
		put.ExpressionAttributeValues = map[string]types.AttributeValue{":rev": num(w.From)}
	}

	if w.Delta == 0 {
		_, err = d.db.PutItem(ctx, &dynamodb.PutItemInput{
			TableName: put.TableName, Item: put.Item, ConditionExpression: put.ConditionExpression,
			ExpressionAttributeNames: put.ExpressionAttributeNames, ExpressionAttributeValues: put.ExpressionAttributeValues,
		})
		var busy *types.TransactionConflictException
		if _, ok := isConditionFailed(err); ok || errors.As(err, &busy) {
			return fmt.Errorf("write ledger of %s/%s: %w", w.Key.UserID, w.Key.Day, ledger.ErrConflict)
		}
		if err != nil {
			return fmt.Errorf("write ledger of %s/%s: %w", w.Key.UserID, w.Key.Day, err)
		}
		return nil
	}

	err = d.transact(ctx, []types.TransactWriteItem{{Put: put}, {Update: &types.Update{
		TableName:                 aws.String(d.tables.State),
		Key:                       stateKey(tablekeys.UsageOnDay(w.Key.UserID, w.Key.Day)),
		UpdateExpression:          aws.String("ADD #c :delta SET #u = :user, #d = :day, #ttl = :ttl"),
		ExpressionAttributeNames:  map[string]string{"#c": attrCost, "#u": "userId", "#d": "day", "#ttl": tablekeys.TTL},
		ExpressionAttributeValues: map[string]types.AttributeValue{":delta": num(int64(w.Delta)), ":user": str(w.Key.UserID), ":day": str(w.Key.Day), ":ttl": num(ttl)},
	}}})
	var tce *types.TransactionCanceledException
	if errors.As(err, &tce) && (failedCondition(tce.CancellationReasons, 0) || conflict(tce.CancellationReasons)) {
		return fmt.Errorf("write ledger of %s/%s: %w", w.Key.UserID, w.Key.Day, ledger.ErrConflict)
	}
	if err != nil {
		return fmt.Errorf("write ledger of %s/%s: %w", w.Key.UserID, w.Key.Day, err)
	}
	return nil
}

// MarkAlarm sets the spend alarm's marker on the usage item, conditional
// on the marker read (none, or another threshold's). The admission's
// transactions hold the same item, so a write that meets one is retried.
func (d *Dynamo) MarkAlarm(ctx context.Context, k ledger.DayKey, id, prev string, at time.Time) (bool, error) {
	dayStart, err := time.Parse(utcday.Layout, k.Day)
	if err != nil {
		return false, fmt.Errorf("mark alarm: day %q: %w", k.Day, err)
	}
	cond, values := "attribute_not_exists(#m)", map[string]types.AttributeValue{}
	if prev != "" {
		cond, values[":prev"] = "#m = :prev", str(prev)
	}
	values[":id"], values[":at"], values[":user"], values[":day"], values[":ttl"] = str(id), encodeTime(at), str(k.UserID), str(k.Day), num(tablekeys.ExpiresAfterDay(dayStart))
	in := &dynamodb.UpdateItemInput{
		TableName:                 aws.String(d.tables.State),
		Key:                       stateKey(tablekeys.UsageOnDay(k.UserID, k.Day)),
		UpdateExpression:          aws.String("SET #m = :id, #at = :at, #u = :user, #d = :day, #ttl = :ttl"),
		ConditionExpression:       aws.String(cond),
		ExpressionAttributeNames:  map[string]string{"#m": attrAlarmID, "#at": attrAlarmRaised, "#u": "userId", "#d": "day", "#ttl": tablekeys.TTL},
		ExpressionAttributeValues: values,
	}
	err = d.retryConflicts(ctx, func() error {
		_, err := d.db.UpdateItem(ctx, in)
		return err
	}, func(err error) bool {
		var busy *types.TransactionConflictException
		return errors.As(err, &busy)
	})
	if _, ok := isConditionFailed(err); ok {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("mark alarm of %s/%s: %w", k.UserID, k.Day, err)
	}
	return true, nil
}
