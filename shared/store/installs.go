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

	"github.com/commonly/runtime/shared/tablekeys"
	"github.com/commonly/runtime/shared/turns"
)

const (
	// attrNoTools marks an install whose tools list is set and empty.
	attrNoTools = "noTools"
	// attrPlan is the plan item's plan name.
	attrPlan = "plan"
)

// GetInstall reads an install.
func (d *Dynamo) GetInstall(ctx context.Context, installID string) (*turns.Install, error) {
	item, err := d.getItem(ctx, d.tables.State, stateKey(tablekeys.Install(installID)))
	if err != nil {
		return nil, fmt.Errorf("get install %s: %w", installID, err)
	}
	return decodeInstall(installID, item)
}

func decodeInstall(installID string, item map[string]types.AttributeValue) (*turns.Install, error) {
	if len(item) == 0 {
		return nil, fmt.Errorf("install %q: %w", installID, turns.ErrNotFound)
	}
	var in turns.Install
	noTools := false
	if b, ok := item[attrNoTools].(*types.AttributeValueMemberBOOL); ok && b.Value {
		noTools = true
		delete(item, "tools")
	}
	if err := attributevalue.UnmarshalMap(item, &in); err != nil {
		return nil, fmt.Errorf("decode install %s: %w", installID, err)
	}
	if noTools {
		in.Tools = &[]string{}
	}
	return &in, nil
}

func decodePlan(item map[string]types.AttributeValue) turns.Plan {
	p, err := turns.ParsePlan(strAttr(item, attrPlan))
	if err != nil {
		return turns.PlanFree // unknown users, and any unknown value, are free
	}
	return p
}

// GetInstallAndPlan reads an install and a user's plan in one BatchGetItem.
func (d *Dynamo) GetInstallAndPlan(ctx context.Context, installID, userID string) (*turns.Install, turns.Plan, error) {
	items, err := d.batchGetState(ctx, tablekeys.Install(installID), tablekeys.Plan(userID))
	if err != nil {
		return nil, "", fmt.Errorf("get install %s and plan: %w", installID, err)
	}
	in, err := decodeInstall(installID, items[tablekeys.Install(installID)])
	if err != nil {
		return nil, "", err
	}
	return in, decodePlan(items[tablekeys.Plan(userID)]), nil
}

// maxBatchAttempts bounds the calls of one batch get.
const maxBatchAttempts = 6

// batchGetState reads up to 100 state items by key, strongly consistent.
func (d *Dynamo) batchGetState(ctx context.Context, ks ...tablekeys.Key) (map[tablekeys.Key]map[string]types.AttributeValue, error) {
	req := make([]map[string]types.AttributeValue, len(ks))
	for i, k := range ks {
		req[i] = stateKey(k)
	}
	items, err := d.batchGet(ctx, d.tables.State, types.KeysAndAttributes{Keys: req, ConsistentRead: aws.Bool(true)})
	if err != nil {
		return nil, err
	}
	got := make(map[tablekeys.Key]map[string]types.AttributeValue, len(items))
	for _, item := range items {
		got[tablekeys.Key{PK: strAttr(item, tablekeys.PK), SK: strAttr(item, tablekeys.SK)}] = item
	}
	return got, nil
}

// batchGet reads up to 100 items of a table, retrying unprocessed keys
// (DynamoDB may return part of a batch under load) after a jittered
// wait (d.unprocessed). Missing items are left out.
func (d *Dynamo) batchGet(ctx context.Context, table string, ka types.KeysAndAttributes) ([]map[string]types.AttributeValue, error) {
	var got []map[string]types.AttributeValue
	pending := map[string]types.KeysAndAttributes{table: ka}
	for attempt := 0; len(pending) > 0; attempt++ {
		if attempt > 0 {
			if attempt >= maxBatchAttempts {
				return nil, fmt.Errorf("batch get: keys still unprocessed after %d attempts", attempt)
			}
			if err := d.unprocessed.Wait(ctx, attempt-1); err != nil {
				return nil, err
			}
		}
		out, err := d.db.BatchGetItem(ctx, &dynamodb.BatchGetItemInput{RequestItems: pending})
		if err != nil {
			return nil, err
		}
		got = append(got, out.Responses[table]...)
		pending = out.UnprocessedKeys
	}
	return got, nil
}

// GetPlan reads a user's plan; a user without one is free.
func (d *Dynamo) GetPlan(ctx context.Context, userID string) (turns.Plan, error) {
	item, err := d.getItem(ctx, d.tables.State, stateKey(tablekeys.Plan(userID)))
	if err != nil {
		return "", fmt.Errorf("get plan of %s: %w", userID, err)
	}
	return decodePlan(item), nil
}

// SetPlan writes a user's plan. Every admission's transaction checks the
// plan item, and DynamoDB refuses a plain write to an item that a
// transaction in flight holds (TransactionConflict, which the SDK does not
// retry), so the write is retried with jitter, as a transaction would be.
func (d *Dynamo) SetPlan(ctx context.Context, userID string, p turns.Plan, now time.Time) error {
	item := stateKey(tablekeys.Plan(userID))
	item[attrPlan], item["userId"], item["updatedAt"] = str(string(p)), str(userID), encodeTime(now)
	err := d.retryConflicts(ctx, func() error {
		_, err := d.db.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(d.tables.State), Item: item})
		return err
	}, func(err error) bool {
		var busy *types.TransactionConflictException
		return errors.As(err, &busy)
	})
	if err != nil {
		return fmt.Errorf("put plan of %s: %w", userID, err)
	}
	return nil
}

// PutInstall writes an install whole.
func (d *Dynamo) PutInstall(ctx context.Context, in *turns.Install) error {
	item, err := withKey(in, tablekeys.Install(in.InstallID))
	if err != nil {
		return err
	}
	if in.Tools != nil && len(*in.Tools) == 0 {
		// "No tools" must survive a round trip distinct from "all tools";
		// an explicit flag does not depend on how a server keeps empty lists.
		delete(item, "tools")
		item[attrNoTools] = &types.AttributeValueMemberBOOL{Value: true}
	}
	if _, err := d.db.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(d.tables.State), Item: item}); err != nil {
		return fmt.Errorf("put install %s: %w", in.InstallID, err)
	}
	return nil
}

// SetMigration records a migration on an existing install.
func (d *Dynamo) SetMigration(ctx context.Context, installID string, m turns.Migration) (*turns.Install, error) {
	mv, err := attributevalue.Marshal(m)
	if err != nil {
		return nil, fmt.Errorf("marshal migration: %w", err)
	}
	out, err := d.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                 aws.String(d.tables.State),
		Key:                       stateKey(tablekeys.Install(installID)),
		UpdateExpression:          aws.String("SET #m = :m, #u = :u"),
		ConditionExpression:       aws.String("attribute_exists(#pk)"),
		ExpressionAttributeNames:  map[string]string{"#m": "migration", "#u": "updatedAt", "#pk": tablekeys.PK},
		ExpressionAttributeValues: map[string]types.AttributeValue{":m": mv, ":u": encodeTime(m.UpdatedAt)},
		ReturnValues:              types.ReturnValueAllNew,
	})
	if _, ok := isConditionFailed(err); ok {
		return nil, fmt.Errorf("install %q: %w", installID, turns.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("set migration of %s: %w", installID, err)
	}
	return decodeInstall(installID, out.Attributes)
}

// Usage reads a user's plan and counters for a UTC day in one round trip.
func (d *Dynamo) Usage(ctx context.Context, userID, day string) (turns.Usage, error) {
	items, err := d.batchGetState(ctx, tablekeys.Plan(userID), tablekeys.UsageOnDay(userID, day))
	if err != nil {
		return turns.Usage{}, fmt.Errorf("get usage of %s: %w", userID, err)
	}
	u := items[tablekeys.UsageOnDay(userID, day)]
	return turns.Usage{Plan: decodePlan(items[tablekeys.Plan(userID)]), Turns: numAttr(u, attrTurns), CostMicros: numAttr(u, attrCost),
		SpendAlarmRaised: strAttr(u, attrAlarmID) != "", ReservedMicros: numAttr(u, attrReserved), CapCommittedMicros: numAttr(u, attrCapCommitted)}, nil
}
