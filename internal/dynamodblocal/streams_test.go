package dynamodblocal

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// TestStreamRecordShapes: an insert, a modify and a remove on the runs
// table (NEW_AND_OLD_IMAGES) reach the handler as Lambda delivers them,
// field by field; the raw JSON has Lambda's field names.
func TestStreamRecordShapes(t *testing.T) {
	EmbeddedOnly(t, "the records' own fields (eventID, sequence numbers, times on the manual clock) are the embedded server's; on the reference they are DynamoDB Local's")
	ts := newTestServer(t, Config{})
	ctx := context.Background()
	calls := ts.subscribe(t, "runs", MappingConfig{}, nil)
	info, err := ts.Describe(ctx, "runs")
	if err != nil {
		t.Fatal(err)
	}
	arn := info[0].StreamARN

	ts.put(t, "runs", map[string]types.AttributeValue{"runId": str("r1"), "status": str("queued"), "costMicros": num("0"),
		"steps": &types.AttributeValueMemberL{Value: []types.AttributeValue{}}})
	if _, err := ts.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: aws.String("runs"), Key: run("r1"),
		UpdateExpression: aws.String("SET #s = :s ADD costMicros :c"), ExpressionAttributeNames: map[string]string{"#s": "status"},
		ExpressionAttributeValues: map[string]types.AttributeValue{":s": str("succeeded"), ":c": num("1250")}}); err != nil {
		t.Fatal(err)
	}
	if _, err := ts.db.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: aws.String("runs"), Key: run("r1")}); err != nil {
		t.Fatal(err)
	}
	got := records(t, calls, 3)

	seen := map[string]bool{}
	for i, r := range got {
		if r.AWSRegion != Region || r.EventSource != "aws:dynamodb" || r.EventVersion != "1.1" || r.EventSourceArn != arn {
			t.Errorf("record %d: region %q source %q version %q arn %q (stream %q)", i, r.AWSRegion, r.EventSource, r.EventVersion, r.EventSourceArn, arn)
		}
		if b, err := hex.DecodeString(r.EventID); err != nil || len(b) != 16 || seen[r.EventID] {
			t.Errorf("record %d: eventID %q", i, r.EventID)
		}
		seen[r.EventID] = true
		c := r.Change
		if want := sequenceNumber(uint64(i + 1)); c.SequenceNumber != want || len(c.SequenceNumber) != 21 {
			t.Errorf("record %d: SequenceNumber %q, want %q", i, c.SequenceNumber, want)
		}
		if !c.ApproximateCreationDateTime.Equal(t0.Truncate(1e9)) {
			t.Errorf("record %d: ApproximateCreationDateTime %v, want %v (rounded down to the second)", i, c.ApproximateCreationDateTime, t0)
		}
		if c.StreamViewType != "NEW_AND_OLD_IMAGES" || c.SizeBytes < 1 || r.UserIdentity != nil {
			t.Errorf("record %d: view %q size %d identity %v", i, c.StreamViewType, c.SizeBytes, r.UserIdentity)
		}
		if len(c.Keys) != 1 || c.Keys["runId"].String() != "r1" {
			t.Errorf("record %d: Keys %v", i, c.Keys)
		}
	}
	insert, modify, remove := got[0], got[1], got[2]
	if insert.EventName != "INSERT" || insert.Change.OldImage != nil || insert.Change.NewImage["status"].String() != "queued" ||
		insert.Change.NewImage["steps"].DataType() != events.DataTypeList || len(insert.Change.NewImage["steps"].List()) != 0 {
		t.Errorf("INSERT %+v", insert.Change)
	}
	if modify.EventName != "MODIFY" || modify.Change.OldImage["status"].String() != "queued" ||
		modify.Change.NewImage["status"].String() != "succeeded" || modify.Change.NewImage["costMicros"].Number() != "1250" {
		t.Errorf("MODIFY %+v", modify.Change)
	}
	if remove.EventName != "REMOVE" || remove.Change.NewImage != nil || remove.Change.OldImage["status"].String() != "succeeded" {
		t.Errorf("REMOVE %+v", remove.Change)
	}

	// The wire names, as Lambda's JSON has them.
	raw, err := json.Marshal(modify)
	if err != nil {
		t.Fatal(err)
	}
	var wire map[string]any
	if err := json.Unmarshal(raw, &wire); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"awsRegion", "dynamodb", "eventID", "eventName", "eventSource", "eventVersion", "eventSourceARN"} {
		if _, ok := wire[k]; !ok {
			t.Errorf("no %q in %s", k, raw)
		}
	}
	ddb, _ := wire["dynamodb"].(map[string]any)
	for _, k := range []string{"ApproximateCreationDateTime", "Keys", "NewImage", "OldImage", "SequenceNumber", "SizeBytes", "StreamViewType"} {
		if _, ok := ddb[k]; !ok {
			t.Errorf("no dynamodb.%q in %s", k, raw)
		}
	}
	if ddb["ApproximateCreationDateTime"] != float64(t0.Unix()) {
		t.Errorf("ApproximateCreationDateTime %v, want %d", ddb["ApproximateCreationDateTime"], t0.Unix())
	}
}

// TestViewTypes: each view type carries the images it names.
func TestViewTypes(t *testing.T) {
	ts := newTestServer(t, Config{})
	ctx := context.Background()
	for _, view := range []types.StreamViewType{types.StreamViewTypeKeysOnly, types.StreamViewTypeNewImage, types.StreamViewTypeOldImage} {
		table := "t-" + string(view)
		if _, err := ts.db.CreateTable(ctx, &dynamodb.CreateTableInput{
			TableName: aws.String(table), BillingMode: types.BillingModePayPerRequest,
			AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String("runId"), AttributeType: types.ScalarAttributeTypeS}},
			KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String("runId"), KeyType: types.KeyTypeHash}},
			StreamSpecification:  &types.StreamSpecification{StreamEnabled: aws.Bool(true), StreamViewType: view},
		}); err != nil {
			t.Fatal(err)
		}
		calls := ts.subscribe(t, table, MappingConfig{}, nil)
		ts.put(t, table, run("a", "v", "1"))
		ts.put(t, table, run("a", "v", "2"))
		got := records(t, calls, 2)
		for _, r := range got {
			if r.Change.StreamViewType != string(view) || r.Change.Keys["runId"].String() != "a" {
				t.Errorf("%s: %+v", view, r.Change)
			}
		}
		modify := got[1].Change
		hasNew, hasOld := modify.NewImage != nil, modify.OldImage != nil
		wantNew, wantOld := view == types.StreamViewTypeNewImage, view == types.StreamViewTypeOldImage
		if hasNew != wantNew || hasOld != wantOld {
			t.Errorf("%s: NewImage %v OldImage %v", view, modify.NewImage, modify.OldImage)
		}
	}
	if _, err := ts.Subscribe(ctx, "state", nil, MappingConfig{}); !errors.Is(err, ErrNoStream) {
		t.Errorf("subscribe to a table without a stream: %v", err)
	}
}

// TestNoRecordWithoutAChange: a failed condition, a put of the same item,
// an update that sets what is there and a delete of a missing item write
// nothing to the stream; the next real write is the next record.
func TestNoRecordWithoutAChange(t *testing.T) {
	ts := newTestServer(t, Config{})
	ctx := context.Background()
	ts.put(t, "runs", run("r1", "status", "queued"))
	calls := ts.subscribe(t, "runs", MappingConfig{StartingPosition: events.DynamoDBShardIteratorTypeLatest}, nil)

	_, err := ts.db.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String("runs"), Item: run("r1", "status", "running"),
		ConditionExpression: aws.String("attribute_not_exists(runId)")})
	var ccf *types.ConditionalCheckFailedException
	if !errors.As(err, &ccf) {
		t.Fatalf("conditional put: %v", err)
	}
	ts.put(t, "runs", run("r1", "status", "queued"))
	if _, err := ts.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: aws.String("runs"), Key: run("r1"),
		UpdateExpression: aws.String("SET #s = :s"), ExpressionAttributeNames: map[string]string{"#s": "status"},
		ExpressionAttributeValues: map[string]types.AttributeValue{":s": str("queued")}}); err != nil {
		t.Fatal(err)
	}
	if _, err := ts.db.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: aws.String("runs"), Key: run("missing")}); err != nil {
		t.Fatal(err)
	}
	ts.put(t, "runs", run("marker"))

	got := next(t, calls).event.Records
	if len(got) != 1 || got[0].Change.Keys["runId"].String() != "marker" || got[0].EventName != "INSERT" {
		t.Fatalf("records %+v, want only the marker's INSERT", got)
	}
}

// TestTransactionRecords: a committed transaction over three items gives
// three records, together, in item order; a cancelled one gives none and
// its reasons are DynamoDB's.
func TestTransactionRecords(t *testing.T) {
	ts := newTestServer(t, Config{})
	ctx := context.Background()
	ts.put(t, "runs", run("b", "status", "running"))
	ts.put(t, "runs", run("c"))
	calls := ts.subscribe(t, "runs", MappingConfig{StartingPosition: events.DynamoDBShardIteratorTypeLatest}, nil)

	_, err := ts.db.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{
		{Put: &types.Put{TableName: aws.String("runs"), Item: run("b", "status", "x"), ConditionExpression: aws.String("attribute_not_exists(runId)")}},
		{Put: &types.Put{TableName: aws.String("runs"), Item: run("a")}},
		{Delete: &types.Delete{TableName: aws.String("runs"), Key: run("c"), ConditionExpression: aws.String("attribute_not_exists(runId)"),
			ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld}},
		{ConditionCheck: &types.ConditionCheck{TableName: aws.String("state"), Key: map[string]types.AttributeValue{"pk": str("p"), "sk": str("s")},
			ConditionExpression: aws.String("attribute_not_exists(pk)")}},
	}})
	var tce *types.TransactionCanceledException
	if !errors.As(err, &tce) {
		t.Fatalf("cancelled transaction: %v", err)
	}
	var codes []string
	for _, r := range tce.CancellationReasons {
		codes = append(codes, aws.ToString(r.Code))
	}
	if !slices.Equal(codes, []string{"ConditionalCheckFailed", "None", "ConditionalCheckFailed", "None"}) ||
		aws.ToString(tce.Message) != "Transaction cancelled, please refer cancellation reasons for specific reasons [ConditionalCheckFailed, None, ConditionalCheckFailed, None]" ||
		len(tce.CancellationReasons[0].Item) != 0 || len(tce.CancellationReasons[2].Item) != 1 {
		t.Errorf("reasons %v %+v: %s", codes, tce.CancellationReasons, aws.ToString(tce.Message))
	}

	if _, err := ts.db.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{
		{Put: &types.Put{TableName: aws.String("runs"), Item: run("a"), ConditionExpression: aws.String("attribute_not_exists(runId)")}},
		{Update: &types.Update{TableName: aws.String("runs"), Key: run("b"), UpdateExpression: aws.String("SET #s = :s"),
			ExpressionAttributeNames: map[string]string{"#s": "status"}, ExpressionAttributeValues: map[string]types.AttributeValue{":s": str("done")}}},
		{Put: &types.Put{TableName: aws.String("state"), Item: map[string]types.AttributeValue{"pk": str("p"), "sk": str("s")}}},
		{Delete: &types.Delete{TableName: aws.String("runs"), Key: run("c")}},
	}}); err != nil {
		t.Fatal(err)
	}
	got := next(t, calls).event.Records // the three together: none from the cancelled one
	var names []string
	for _, r := range got {
		names = append(names, r.EventName+" "+r.Change.Keys["runId"].String())
	}
	if !slices.Equal(names, []string{"INSERT a", "MODIFY b", "REMOVE c"}) {
		t.Errorf("records %v", names)
	}
}

// TestConcurrentWritersKeepEachItemsOrder: writers racing on a few items;
// every item's records come in the order of its writes (each record's old
// image is the previous record's new image) and the counters are exact.
func TestConcurrentWritersKeepEachItemsOrder(t *testing.T) {
	ts := newTestServer(t, Config{})
	ctx := context.Background()
	const items, writers, each = 3, 8, 25
	calls := ts.subscribe(t, "runs", MappingConfig{BatchSize: 1000}, nil)
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			for i := range each {
				id := fmt.Sprint("item", (w+i)%items)
				if _, err := ts.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: aws.String("runs"), Key: run(id),
					UpdateExpression: aws.String("ADD n :one"), ExpressionAttributeValues: map[string]types.AttributeValue{":one": num("1")}}); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	got := records(t, calls, writers*each)
	last := map[string]int{}
	for i, r := range got {
		if i > 0 && r.Change.SequenceNumber <= got[i-1].Change.SequenceNumber {
			t.Fatalf("sequence numbers out of order: %s after %s", r.Change.SequenceNumber, got[i-1].Change.SequenceNumber)
		}
		id := r.Change.Keys["runId"].String()
		n, _ := strconv.Atoi(r.Change.NewImage["n"].Number())
		old := 0
		if r.EventName == "MODIFY" {
			old, _ = strconv.Atoi(r.Change.OldImage["n"].Number())
		}
		if old != last[id] || n != old+1 {
			t.Fatalf("%s: record %s goes %d→%d after %d", id, r.Change.SequenceNumber, old, n, last[id])
		}
		last[id] = n
	}
	total := 0
	for _, n := range last {
		total += n
	}
	if total != writers*each {
		t.Errorf("counters %v, want a total of %d", last, writers*each)
	}
}

// TestConcurrentTransactionsOnOneCounter: 100 transactions at once, each
// adding one to a counter below a limit and creating an item, serialise:
// the counter and the items are exact.
func TestConcurrentTransactionsOnOneCounter(t *testing.T) {
	ts := newTestServer(t, Config{})
	ctx := context.Background()
	const n, limit = 100, 60
	var wg sync.WaitGroup
	var mu sync.Mutex
	committed, cancelled := 0, 0
	for i := range n {
		wg.Go(func() {
			_, err := ts.db.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{
				{Update: &types.Update{TableName: aws.String("state"), Key: map[string]types.AttributeValue{"pk": str("counter"), "sk": str("c")},
					UpdateExpression: aws.String("ADD c :one"), ConditionExpression: aws.String("attribute_not_exists(c) OR c < :limit"),
					ExpressionAttributeValues: map[string]types.AttributeValue{":one": num("1"), ":limit": num(strconv.Itoa(limit))}}},
				{Put: &types.Put{TableName: aws.String("runs"), Item: run(fmt.Sprint("r", i)), ConditionExpression: aws.String("attribute_not_exists(runId)")}},
			}})
			var tce *types.TransactionCanceledException
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				committed++
			case errors.As(err, &tce):
				cancelled++
			default:
				t.Error(err)
			}
		})
	}
	wg.Wait()
	out, err := ts.db.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String("state"), Key: map[string]types.AttributeValue{"pk": str("counter"), "sk": str("c")}})
	if err != nil {
		t.Fatal(err)
	}
	scan, err := ts.db.Scan(ctx, &dynamodb.ScanInput{TableName: aws.String("runs")})
	if err != nil {
		t.Fatal(err)
	}
	c := out.Item["c"].(*types.AttributeValueMemberN).Value
	if committed != limit || cancelled != n-limit || c != strconv.Itoa(limit) || len(scan.Items) != limit {
		t.Errorf("committed %d cancelled %d counter %s runs %d; want %d, %d, %d, %d", committed, cancelled, c, len(scan.Items), limit, n-limit, limit, limit)
	}
}

// TestContainsOnAMissingAttributeIsFalse, as in DynamoDB (minidyn 0.8.2
// failed the request).
func TestContainsOnAMissingAttributeIsFalse(t *testing.T) {
	ts := newTestServer(t, Config{})
	ctx := context.Background()
	ts.put(t, "runs", run("r1"))
	if _, err := ts.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: aws.String("runs"), Key: run("r1"),
		UpdateExpression: aws.String("SET tags = :t"), ConditionExpression: aws.String("NOT contains(tags, :tag)"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":t": &types.AttributeValueMemberSS{Value: []string{"x"}}, ":tag": str("x")}}); err != nil {
		t.Fatalf("NOT contains() on a missing attribute: %v", err)
	}
	_, err := ts.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: aws.String("runs"), Key: run("r1"),
		UpdateExpression: aws.String("SET #o = :t"), ConditionExpression: aws.String("contains(absent, :tag)"),
		ExpressionAttributeNames: map[string]string{"#o": "other"}, ExpressionAttributeValues: map[string]types.AttributeValue{":t": str("y"), ":tag": str("x")}})
	var ccf *types.ConditionalCheckFailedException
	if !errors.As(err, &ccf) {
		t.Errorf("contains() on a missing attribute: %v, want a failed condition", err)
	}
}
