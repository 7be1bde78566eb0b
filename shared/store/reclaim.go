package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/commonly/runtime/shared/sandbox"
	"github.com/commonly/runtime/shared/tablekeys"
	"github.com/commonly/runtime/shared/turns"
)

var _ turns.ReclaimStore = (*Dynamo)(nil)

// maxOpenPage bounds one page of the open index: its entries are keys
// only (about 100 bytes), so a page stays far below DynamoDB's 1 MB.
const maxOpenPage = 1000

// OpenRuns lists the runs on one shard of the open index (0 to
// IndexShards-1) admitted before before, oldest first, at most limit,
// following the shard's pages. The index
// holds only open runs (marshalRun); it is eventually consistent, so a
// run finished a moment ago may still be listed: the caller reads the
// run before acting on it.
func (d *Dynamo) OpenRuns(ctx context.Context, shard int, before time.Time, limit int) ([]turns.OpenRun, error) {
	if limit <= 0 {
		return nil, fmt.Errorf("open runs: limit %d is not positive", limit)
	}
	if shard < 0 || shard >= d.shards {
		return nil, fmt.Errorf("open runs: shard %d is not below %d", shard, d.shards)
	}
	in := &dynamodb.QueryInput{
		TableName:                 aws.String(d.tables.Runs),
		IndexName:                 aws.String(tablekeys.OpenIndex),
		KeyConditionExpression:    aws.String("#pk = :open AND #since < :before"),
		ExpressionAttributeNames:  map[string]string{"#pk": tablekeys.OpenPK, "#since": tablekeys.OpenSK},
		ExpressionAttributeValues: map[string]types.AttributeValue{":open": str(tablekeys.OpenPartition(shard)), ":before": str(tablekeys.OpenSort(before))},
		ScanIndexForward:          aws.Bool(true),
	}
	var open []turns.OpenRun
	err := d.queryPages(ctx, in, limit, d.openPage, func(item map[string]types.AttributeValue) error {
		id, since := strAttr(item, tablekeys.RunID), strAttr(item, tablekeys.OpenSK)
		at, err := tablekeys.ParseSort(since)
		if id == "" || err != nil {
			return fmt.Errorf("open index entry %q (since %q): %w", id, since, errMalformedEntry)
		}
		open = append(open, turns.OpenRun{RunID: id, Since: at})
		return nil
	})
	if err != nil {
		return open, fmt.Errorf("query open runs of shard %d (%d listed): %w", shard, len(open), err)
	}
	return open, nil
}

// errMalformedEntry is an index entry the store did not write.
var errMalformedEntry = errors.New("malformed index entry")

// RunSandboxes lists the run's sandboxes still recorded running, from
// the runSandboxes index: one Query, as many items as the run made
// sandboxes (at most one per turn today).
func (d *Dynamo) RunSandboxes(ctx context.Context, runID string) ([]turns.SandboxRef, error) {
	in := &dynamodb.QueryInput{
		TableName:                 aws.String(d.tables.State),
		IndexName:                 aws.String(tablekeys.RunSandboxesIndex),
		KeyConditionExpression:    aws.String("#run = :run"),
		FilterExpression:          aws.String("#st = :running"),
		ExpressionAttributeNames:  map[string]string{"#run": tablekeys.RunID, "#st": "status"},
		ExpressionAttributeValues: map[string]types.AttributeValue{":run": str(runID), ":running": str(sandbox.StatusRunning)},
	}
	var refs []turns.SandboxRef
	err := d.queryPages(ctx, in, 0, 0, func(item map[string]types.AttributeValue) error {
		created, _ := time.Parse(time.RFC3339Nano, strAttr(item, "createdAt"))
		refs = append(refs, turns.SandboxRef{Provider: strAttr(item, "provider"), SandboxID: strAttr(item, tablekeys.SandboxID), CreatedAt: created})
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("query sandboxes of run %s: %w", runID, err)
	}
	return refs, nil
}
