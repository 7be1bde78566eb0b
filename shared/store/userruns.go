package store

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/commonly/runtime/shared/runs"
	"github.com/commonly/runtime/shared/tablekeys"
	"github.com/commonly/runtime/shared/turns"
)

// summaryAttributes are the run's attributes a summary is made of: what
// a page's open runs are read with (ProjectionExpression), not their
// steps and events.
var summaryAttributes = []string{tablekeys.RunID, "userId", "installId", "engine", "model", "status", "errorKind", "tokens", "costMicros", "createdAt", "startedAt", "completedAt"}

// ListRuns reads a page of a user's runs from the user-runs index,
// newest first (one Query, backwards). A finished run's entry holds its
// summary; the page's open runs, whose entries hold only keys, are read
// from the table in one BatchGetItem (tablekeys/userruns.go says why).
func (d *Dynamo) ListRuns(ctx context.Context, userID, cursor string, limit int) (turns.RunPage, error) {
	if limit < 1 || limit > turns.MaxRunsPage {
		return turns.RunPage{}, fmt.Errorf("list runs: limit %d is not between 1 and %d", limit, turns.MaxRunsPage)
	}
	in := &dynamodb.QueryInput{
		TableName:                 aws.String(d.tables.Runs),
		IndexName:                 aws.String(tablekeys.UserRunsIndex),
		KeyConditionExpression:    aws.String("#u = :u"),
		ExpressionAttributeNames:  map[string]string{"#u": tablekeys.UserRunsPK},
		ExpressionAttributeValues: map[string]types.AttributeValue{":u": str(userID)},
		ScanIndexForward:          aws.Bool(false),
		Limit:                     aws.Int32(int32(limit)),
	}
	if cursor != "" {
		sort, runID, ok := tablekeys.ParseUserRunsCursor(cursor)
		if !ok {
			return turns.RunPage{}, fmt.Errorf("list runs of %s: cursor %q: %w", userID, cursor, errMalformedEntry)
		}
		in.ExclusiveStartKey = map[string]types.AttributeValue{
			tablekeys.UserRunsPK: str(userID), tablekeys.UserRunsSK: str(sort), tablekeys.RunID: str(runID),
		}
	}
	out, err := d.db.Query(ctx, in)
	if err != nil {
		return turns.RunPage{}, fmt.Errorf("query runs of %s: %w", userID, err)
	}
	page := turns.RunPage{Runs: make([]runs.Summary, len(out.Items))}
	open := map[string]int{} // run id → its place in the page
	for i, item := range out.Items {
		id := strAttr(item, tablekeys.RunID)
		sum, ok := item[tablekeys.UserRunsSummary].(*types.AttributeValueMemberM)
		if !ok {
			open[id] = i
			continue
		}
		if err := attributevalue.UnmarshalMap(sum.Value, &page.Runs[i]); err != nil {
			return turns.RunPage{}, fmt.Errorf("decode the summary of run %s: %w", id, err)
		}
		page.Runs[i].RunID, page.Runs[i].UserID = id, userID
	}
	if err := d.readOpen(ctx, open, page.Runs); err != nil {
		return turns.RunPage{}, fmt.Errorf("read the open runs of %s: %w", userID, err)
	}
	// An open run gone from the table (expired between the two reads) is
	// left out rather than shown empty.
	kept := page.Runs[:0]
	for _, r := range page.Runs {
		if r.RunID != "" {
			kept = append(kept, r)
		}
	}
	page.Runs = kept
	if lek := out.LastEvaluatedKey; len(lek) > 0 {
		page.Next = tablekeys.UserRunsCursor(strAttr(lek, tablekeys.UserRunsSK), strAttr(lek, tablekeys.RunID))
	}
	return page, nil
}

// readOpen fills the summaries of the open runs (run id → place in
// page) from the table, as they are now.
func (d *Dynamo) readOpen(ctx context.Context, open map[string]int, page []runs.Summary) error {
	if len(open) == 0 {
		return nil
	}
	names := make(map[string]string, len(summaryAttributes))
	proj := ""
	for i, a := range summaryAttributes {
		n := fmt.Sprintf("#a%d", i)
		names[n] = a
		if i > 0 {
			proj += ","
		}
		proj += n
	}
	keys := make([]map[string]types.AttributeValue, 0, len(open))
	for id := range open {
		keys = append(keys, runKey(id))
	}
	items, err := d.batchGet(ctx, d.tables.Runs, types.KeysAndAttributes{Keys: keys, ProjectionExpression: aws.String(proj), ExpressionAttributeNames: names})
	if err != nil {
		return err
	}
	for _, item := range items {
		var r runs.Run
		if err := attributevalue.UnmarshalMap(item, &r); err != nil {
			return fmt.Errorf("decode run %s: %w", strAttr(item, tablekeys.RunID), err)
		}
		i, ok := open[r.RunID]
		if !ok {
			return fmt.Errorf("run %q was not asked for: %w", r.RunID, errMalformedEntry)
		}
		page[i] = r.Summary()
	}
	return nil
}
