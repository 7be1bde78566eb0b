// Package ledgertest feeds the real ledger from the embedded DynamoDB's
// runs stream, as the alarm function fed by Lambda's event source mapping
// does in AWS: for the tests of whoever writes runs (the worker, the
// reaper) that check a run's cost reaches the user's day. It is test
// support: it imports the local DynamoDB and the Lambda event types,
// which the domain's own packages never do (shared/imports_test.go).
package ledgertest

import (
	"context"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/commonly/runtime/internal/dynamodblocal"
	"github.com/commonly/runtime/shared/ledger"
	"github.com/commonly/runtime/shared/runs"
)

// Threshold is the spend alarm's, $2: no test that uses Feed reaches it.
const Threshold = 2_000_000

// Feed subscribes the ledger, on st, to db's stream of
// runsTable until the test ends, and returns a channel told the id of each
// run whose record with status has been counted (its batch handled).
// Any spend alarm fails the test. A redelivery nobody waits for is
// dropped, never blocking the stream.
func Feed(t testing.TB, db *dynamodblocal.Server, runsTable string, st ledger.Store, now func() time.Time, status runs.Status) <-chan string {
	t.Helper()
	l, err := ledger.New(ledger.Config{Store: st, Publisher: noAlarms{t}, Threshold: Threshold, Now: now})
	if err != nil {
		t.Fatal(err)
	}
	counted := make(chan string, 64)
	stop, err := db.Subscribe(context.Background(), runsTable, func(ctx context.Context, ev events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
		records := make([]ledger.Record, len(ev.Records))
		for i, r := range ev.Records {
			records[i] = ledger.Record{Seq: r.Change.SequenceNumber, Op: ledger.Op(r.EventName), New: image(r.Change.NewImage, newAttributes(r.Change.NewImage)), Old: image(r.Change.OldImage, ledger.ImageAttributes)}
		}
		res := l.Process(ctx, records)
		resp := events.DynamoDBEventResponse{}
		for _, seq := range res.Failed {
			resp.BatchItemFailures = append(resp.BatchItemFailures, events.DynamoDBBatchItemFailure{ItemIdentifier: seq})
		}
		for _, rec := range ev.Records {
			if s := rec.Change.NewImage["status"]; s.DataType() == events.DataTypeString && s.String() == string(status) {
				select {
				case counted <- rec.Change.NewImage["runId"].String():
				default:
				}
			}
		}
		return resp, nil
	}, dynamodblocal.MappingConfig{ReportBatchItemFailures: true, FunctionName: "AlarmFunction"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	return counted
}

// Wait returns once every id has come on counted, and fails the test if
// one has not within 10 s (a guard, not a synchronisation: the channel
// is told as soon as the ledger has counted).
func Wait(t testing.TB, counted <-chan string, ids ...string) {
	t.Helper()
	want := map[string]bool{}
	for _, id := range ids {
		want[id] = true
	}
	for len(want) > 0 {
		select {
		case id := <-counted:
			delete(want, id)
		case <-time.After(10 * time.Second):
			t.Fatalf("the ledger never counted %v", want)
		}
	}
}

// noAlarms is the alarm function's bus, on which nothing may arrive.
type noAlarms struct{ t testing.TB }

func (p noAlarms) Publish(_ context.Context, alarms []ledger.Alarm) []error {
	p.t.Errorf("unexpected spend alarms: %+v", alarms)
	return make([]error, len(alarms))
}

// image converts the attributes the ledger reads (names) from the stream
// record; the alarm function's translation is its own
// (functions/alarm/handler).
func image(img map[string]events.DynamoDBAttributeValue, names []string) map[string]types.AttributeValue {
	if img == nil {
		return nil
	}
	out := make(map[string]types.AttributeValue, len(names))
	for _, name := range names {
		if v, ok := img[name]; ok {
			if av := convert(v); av != nil {
				out[name] = av
			}
		}
	}
	return out
}

// newAttributes are the attributes the ledger reads of a new image:
// ledger.FinishedImageAttributes when its status is final, else
// ledger.ImageAttributes.
func newAttributes(img map[string]events.DynamoDBAttributeValue) []string {
	if st, ok := img["status"]; ok && st.DataType() == events.DataTypeString && runs.Status(st.String()).Final() {
		return ledger.FinishedImageAttributes
	}
	return ledger.ImageAttributes
}

// convert translates the types a run's item holds (strings, numbers,
// booleans, nulls, lists and maps); nil for any other.
func convert(v events.DynamoDBAttributeValue) types.AttributeValue {
	switch v.DataType() {
	case events.DataTypeString:
		return &types.AttributeValueMemberS{Value: v.String()}
	case events.DataTypeNumber:
		return &types.AttributeValueMemberN{Value: v.Number()}
	case events.DataTypeBoolean:
		return &types.AttributeValueMemberBOOL{Value: v.Boolean()}
	case events.DataTypeNull:
		return &types.AttributeValueMemberNULL{Value: true}
	case events.DataTypeList:
		var l []types.AttributeValue
		for _, e := range v.List() {
			if av := convert(e); av != nil {
				l = append(l, av)
			}
		}
		return &types.AttributeValueMemberL{Value: l}
	case events.DataTypeMap:
		m := map[string]types.AttributeValue{}
		for k, e := range v.Map() {
			if av := convert(e); av != nil {
				m[k] = av
			}
		}
		return &types.AttributeValueMemberM{Value: m}
	}
	return nil
}
