// Package alarmtest feeds the alarm function's handler, with the real
// ledger, from the embedded DynamoDB's runs stream, as Lambda's event
// source mapping feeds it in AWS: for the tests of whoever writes runs
// (the worker, the reaper) that check a run's cost reaches the user's day.
package alarmtest

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	alarm "github.com/commonly/runtime/functions/alarm/handler"
	"github.com/commonly/runtime/infra/awslocal/dynamodblocal"
	"github.com/commonly/runtime/shared/ledger"
	"github.com/commonly/runtime/shared/runs"
)

// Threshold is the spend alarm's, $2: no test that uses Feed reaches it.
const Threshold = 2_000_000

// Feed subscribes the alarm handler, its ledger on st, to db's stream of
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
	h, err := alarm.New(alarm.Config{Ledger: l, Log: slog.New(slog.DiscardHandler), Now: now})
	if err != nil {
		t.Fatal(err)
	}
	counted := make(chan string, 64)
	stop, err := db.Subscribe(context.Background(), runsTable, func(ctx context.Context, ev events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
		resp, err := h.Handle(ctx, ev)
		for _, rec := range ev.Records {
			if s := rec.Change.NewImage["status"]; s.DataType() == events.DataTypeString && s.String() == string(status) {
				select {
				case counted <- rec.Change.NewImage["runId"].String():
				default:
				}
			}
		}
		return resp, err
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
