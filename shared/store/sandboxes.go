package store

import (
	"context"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/commonly/runtime/shared/sandbox"
	"github.com/commonly/runtime/shared/tablekeys"
)

// SandboxCreated records a sandbox before its first run, on the live
// index, so the reaper can find it even if the turn's process dies.
func (d *Dynamo) SandboxCreated(ctx context.Context, rec sandbox.Record) error {
	item, err := withKey(rec, tablekeys.Sandbox(rec.SandboxID))
	if err != nil {
		return err
	}
	shard := tablekeys.Shard(rec.SandboxID, d.shards)
	item[tablekeys.GSI1PK], item[tablekeys.GSI1SK] = str(tablekeys.LivePartition(shard)), str(tablekeys.LiveSort(rec.ExpiresAt))
	// Kept a day after expiry for audit, then removed by the table's TTL.
	item[tablekeys.TTL] = num(rec.ExpiresAt.Add(24 * time.Hour).Unix())
	if _, err := d.db.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(d.tables.State), Item: item}); err != nil {
		return fmt.Errorf("record sandbox %s: %w", rec.SandboxID, err)
	}
	return nil
}

// SandboxKilled marks a sandbox killed and takes it off the live index.
// Marking a sandbox that was never recorded, or is marked already, is not
// an error.
func (d *Dynamo) SandboxKilled(ctx context.Context, sandboxID string, at time.Time) error {
	_, err := d.MarkSandboxKilled(ctx, sandboxID, at)
	return err
}

// MarkSandboxKilled marks a running sandbox killed at at and takes it off
// the live index, and reports whether it did. The write is conditional on
// the record still being running: the turn closing its sandbox and the
// reaper killing it may both mark it, and the first one's time stays. A
// failed condition (never recorded, marked already) is that outcome,
// false, not an error.
func (d *Dynamo) MarkSandboxKilled(ctx context.Context, sandboxID string, at time.Time) (bool, error) {
	_, err := d.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                 aws.String(d.tables.State),
		Key:                       stateKey(tablekeys.Sandbox(sandboxID)),
		UpdateExpression:          aws.String("SET #s = :killed, #k = :at REMOVE #g1, #g2"),
		ConditionExpression:       aws.String("attribute_exists(#pk) AND #s = :running"),
		ExpressionAttributeNames:  map[string]string{"#s": "status", "#k": "killedAt", "#g1": tablekeys.GSI1PK, "#g2": tablekeys.GSI1SK, "#pk": tablekeys.PK},
		ExpressionAttributeValues: map[string]types.AttributeValue{":killed": str(sandbox.StatusKilled), ":running": str(sandbox.StatusRunning), ":at": encodeTime(at)},
	})
	if _, ok := isConditionFailed(err); ok {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("mark sandbox %s killed: %w", sandboxID, err)
	}
	return true, nil
}

// ExpiredSandboxes lists up to limit live sandboxes of one shard of the
// live index (0 to IndexShards-1) whose lifetime ended at or before
// bound, oldest first, for the reaper: a query of the index (never a
// scan), followed page by page until limit records or the shard's end.
func (d *Dynamo) ExpiredSandboxes(ctx context.Context, shard int, bound time.Time, limit int32) ([]sandbox.Record, error) {
	if limit <= 0 {
		return nil, fmt.Errorf("query expired sandboxes: limit %d is not positive", limit)
	}
	if shard < 0 || shard >= d.shards {
		return nil, fmt.Errorf("query expired sandboxes: shard %d is not below %d", shard, d.shards)
	}
	in := &dynamodb.QueryInput{
		TableName:              aws.String(d.tables.State),
		IndexName:              aws.String(tablekeys.LiveIndex),
		KeyConditionExpression: aws.String("#p = :live AND #s <= :bound"),
		// The sparse index drops killed sandboxes in DynamoDB; the filter
		// also holds on servers whose indexes keep stale entries.
		FilterExpression:          aws.String("#st = :running"),
		ExpressionAttributeNames:  map[string]string{"#p": tablekeys.GSI1PK, "#s": tablekeys.GSI1SK, "#st": "status"},
		ExpressionAttributeValues: map[string]types.AttributeValue{":live": str(tablekeys.LivePartition(shard)), ":bound": str(tablekeys.LiveSort(bound)), ":running": str(sandbox.StatusRunning)},
	}
	var recs []sandbox.Record
	err := d.queryPages(ctx, in, int(limit), 0, func(item map[string]types.AttributeValue) error {
		var r sandbox.Record
		if err := attributevalue.UnmarshalMap(item, &r); err != nil {
			return fmt.Errorf("decode sandbox record: %w", err)
		}
		recs = append(recs, r)
		return nil
	})
	if err != nil {
		return recs, fmt.Errorf("query expired sandboxes of shard %d: %w", shard, err)
	}
	return recs, nil
}
