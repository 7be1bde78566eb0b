package dynamodblocal

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambdacontext"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// ids are the runIds of an invocation's records.
func ids(inv invocation) []string {
	var out []string
	for _, r := range inv.event.Records {
		out = append(out, r.Change.Keys["runId"].String())
	}
	return out
}

// putRuns writes one run per id, in one BatchWriteItem (one record each).
func (ts *testServer) putRuns(t *testing.T, idList ...string) {
	t.Helper()
	var reqs []types.WriteRequest
	for _, id := range idList {
		reqs = append(reqs, types.WriteRequest{PutRequest: &types.PutRequest{Item: run(id)}})
	}
	if _, err := ts.db.BatchWriteItem(context.Background(), &dynamodb.BatchWriteItemInput{RequestItems: map[string][]types.WriteRequest{"runs": reqs}}); err != nil {
		t.Fatal(err)
	}
}

// TestBatchingWindow: fewer records than the batch size wait for the
// window (on the clock), a full batch goes at once.
func TestBatchingWindow(t *testing.T) {
	EmbeddedOnly(t, "on the reference, records reach the batching window when the poller reads them, not at the manual clock's instants")
	ts := newTestServer(t, Config{})
	calls := ts.subscribe(t, "runs", MappingConfig{BatchSize: 3, MaximumBatchingWindow: 5 * time.Second}, nil)

	ts.putRuns(t, "a", "b")
	ts.clock.WaitForTimers(1) // the mapping holds a partial batch
	none(t, calls)
	ts.clock.Advance(5 * time.Second)
	if got := ids(next(t, calls)); !slices.Equal(got, []string{"a", "b"}) {
		t.Errorf("after the window: %v", got)
	}

	ts.putRuns(t, "c", "d", "e", "f")
	if got := ids(next(t, calls)); !slices.Equal(got, []string{"c", "d", "e"}) {
		t.Errorf("a full batch: %v", got)
	}
	ts.clock.WaitForTimers(1)
	none(t, calls)
	ts.clock.Advance(5 * time.Second)
	if got := ids(next(t, calls)); !slices.Equal(got, []string{"f"}) {
		t.Errorf("the rest: %v", got)
	}
}

// TestPartialBatchFailureRedeliversFromTheFailedRecord: the lowest failed
// SequenceNumber is the checkpoint; the retry starts there and includes
// the records after it; the records after the batch come next, none
// skipped.
func TestPartialBatchFailureRedeliversFromTheFailedRecord(t *testing.T) {
	ts := newTestServer(t, Config{})
	calls := ts.subscribe(t, "runs", MappingConfig{BatchSize: 5, MaximumBatchingWindow: time.Second, ReportBatchItemFailures: true},
		func(n int, ev events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
			if n > 1 {
				return events.DynamoDBEventResponse{}, nil
			}
			// Records c and e failed: the checkpoint is c.
			return events.DynamoDBEventResponse{BatchItemFailures: []events.DynamoDBBatchItemFailure{
				{ItemIdentifier: ev.Records[4].Change.SequenceNumber}, {ItemIdentifier: ev.Records[2].Change.SequenceNumber},
			}}, nil
		})
	ts.putRuns(t, "a", "b", "c", "d", "e")
	first := next(t, calls)
	if got := ids(first); !slices.Equal(got, []string{"a", "b", "c", "d", "e"}) {
		t.Fatalf("first batch %v", got)
	}
	ts.putRuns(t, "f")
	ts.clock.WaitForTimers(1) // the retry's delay
	none(t, calls)
	ts.clock.Advance(DefaultRetryDelay)
	retry := next(t, calls)
	if got := ids(retry); !slices.Equal(got, []string{"c", "d", "e"}) {
		t.Errorf("retry %v, want c d e", got)
	}
	if retry.event.Records[0].Change.SequenceNumber != first.event.Records[2].Change.SequenceNumber {
		t.Errorf("the retry starts at %s, want %s", retry.event.Records[0].Change.SequenceNumber, first.event.Records[2].Change.SequenceNumber)
	}
	ts.clock.WaitForTimers(1) // f waits for its window
	ts.clock.Advance(time.Second)
	if got := ids(next(t, calls)); !slices.Equal(got, []string{"f"}) {
		t.Errorf("after the retry %v, want f", got)
	}
}

// TestHandlerErrorPanicOrBadIdentifierRetriesTheWholeBatch: an error, a
// panic, or a batchItemFailures identifier that is not in the batch fail
// every record; each retry is the same batch, with a Lambda context.
func TestHandlerErrorPanicOrBadIdentifierRetriesTheWholeBatch(t *testing.T) {
	ts := newTestServer(t, Config{})
	calls := ts.subscribe(t, "runs", MappingConfig{BatchSize: 2, MaximumBatchingWindow: time.Minute, ReportBatchItemFailures: true, FunctionName: "alarm"},
		func(n int, _ events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
			switch n {
			case 1:
				return events.DynamoDBEventResponse{}, errors.New("ledger unavailable")
			case 2:
				panic("nil map")
			case 3:
				return events.DynamoDBEventResponse{BatchItemFailures: []events.DynamoDBBatchItemFailure{{ItemIdentifier: ""}}}, nil
			}
			return events.DynamoDBEventResponse{}, nil
		})
	ts.putRuns(t, "a", "b") // a full batch: no window
	delay := DefaultRetryDelay
	var requestIDs []string
	for attempt := 1; attempt <= 4; attempt++ {
		if attempt > 1 {
			ts.clock.WaitForTimers(1)
			ts.clock.Advance(delay)
			delay *= 2
		}
		inv := next(t, calls)
		if got := ids(inv); !slices.Equal(got, []string{"a", "b"}) {
			t.Errorf("attempt %d: %v", attempt, got)
		}
		lc, ok := lambdacontext.FromContext(inv.ctx)
		if !ok || lc.InvokedFunctionArn != "arn:aws:lambda:us-east-1:000000000000:function:alarm" || slices.Contains(requestIDs, lc.AwsRequestID) {
			t.Errorf("attempt %d: lambda context %+v", attempt, lc)
		}
		requestIDs = append(requestIDs, lc.AwsRequestID)
	}
	for _, want := range []string{"ledger unavailable", "handler panicked: nil map", "is not a SequenceNumber of the batch"} {
		if !strings.Contains(ts.log.String(), want) {
			t.Errorf("log has no %q:\n%s", want, ts.log)
		}
	}
}

// TestBoundedRetriesThenTheOnFailureRecord: after MaxAttempts the batch is
// given up, its place in the stream logged as Lambda's on-failure
// destination receives it, and the mapping goes on with the next records.
func TestBoundedRetriesThenTheOnFailureRecord(t *testing.T) {
	ts := newTestServer(t, Config{})
	failures := make(chan OnFailureRecord, 1)
	calls := ts.subscribe(t, "runs", MappingConfig{BatchSize: 2, MaximumBatchingWindow: time.Minute, MaxAttempts: 2, OnFailure: func(r OnFailureRecord) { failures <- r }},
		func(n int, ev events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
			if ev.Records[0].Change.Keys["runId"].String() == "a" {
				return events.DynamoDBEventResponse{}, errors.New("always")
			}
			return events.DynamoDBEventResponse{}, nil
		})
	ts.putRuns(t, "a", "b")
	first := next(t, calls)
	ts.clock.WaitForTimers(1)
	ts.clock.Advance(DefaultRetryDelay)
	next(t, calls)
	ts.putRuns(t, "c")
	ts.clock.WaitForTimers(1) // c's window
	ts.clock.Advance(time.Minute)
	if got := ids(next(t, calls)); !slices.Equal(got, []string{"c"}) {
		t.Errorf("after the batch was given up: %v", got)
	}

	rec := <-failures
	info, _ := ts.Describe(context.Background(), "runs")
	b := rec.DDBStreamBatchInfo
	if rec.RequestContext.Condition != "RetryAttemptsExhausted" || rec.RequestContext.ApproximateInvokeCount != 2 ||
		rec.RequestContext.FunctionArn != "arn:aws:lambda:us-east-1:000000000000:function:local-handler" ||
		rec.ResponseContext.FunctionError != "Unhandled" || rec.ResponseContext.StatusCode != 200 || rec.Version != "1.0" {
		t.Errorf("on-failure record %+v", rec)
	}
	if !strings.HasPrefix(b.ShardID, "shardId-") || b.StreamArn != info[0].StreamARN || b.BatchSize != 2 ||
		b.StartSequenceNumber != first.event.Records[0].Change.SequenceNumber || b.EndSequenceNumber != first.event.Records[1].Change.SequenceNumber ||
		b.ApproximateArrivalOfFirstRecord != "2026-12-02T10:30:15Z" {
		t.Errorf("batch info %+v", b)
	}

	// The same record is in the log, as JSON.
	var logged struct {
		Msg       string          `json:"msg"`
		OnFailure OnFailureRecord `json:"onFailure"`
	}
	for line := range strings.Lines(ts.log.String()) {
		if strings.Contains(line, `"onFailure"`) {
			if err := json.Unmarshal([]byte(line), &logged); err != nil {
				t.Fatal(err)
			}
		}
	}
	if logged.OnFailure.DDBStreamBatchInfo != b {
		t.Errorf("logged %+v, want %+v", logged, b)
	}
}

// TestStopWaitsAndLatestStartsAtTheEnd: a mapping at LATEST sees only what
// comes after it; after stop nothing is delivered.
func TestStopWaitsAndLatestStartsAtTheEnd(t *testing.T) {
	ts := newTestServer(t, Config{})
	ts.putRuns(t, "old")
	calls := make(chan invocation, 10)
	stop, err := ts.Subscribe(context.Background(), "runs", func(ctx context.Context, ev events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
		calls <- invocation{ctx, ev}
		return events.DynamoDBEventResponse{}, nil
	}, MappingConfig{StartingPosition: events.DynamoDBShardIteratorTypeLatest})
	if err != nil {
		t.Fatal(err)
	}
	ts.putRuns(t, "new")
	if got := ids(next(t, calls)); !slices.Equal(got, []string{"new"}) {
		t.Errorf("LATEST: %v", got)
	}
	stop()
	stop()
	ts.putRuns(t, "after")
	none(t, calls)

	if _, err := ts.Subscribe(context.Background(), "runs", nil, MappingConfig{BatchSize: 20_000}); err == nil || !strings.Contains(err.Error(), "BatchSize") {
		t.Errorf("a batch size over 10,000: %v", err)
	}
	if _, err := ts.Subscribe(context.Background(), "nope", nil, MappingConfig{}); err == nil {
		t.Error("a missing table: no error")
	}
}
