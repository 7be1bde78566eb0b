package handler_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge"

	"github.com/commonly/runtime/functions/alarm/app"
	"github.com/commonly/runtime/functions/alarm/handler"
	"github.com/commonly/runtime/infra/awslocal/eventbridgelocal"
	"github.com/commonly/runtime/internal/awscalls"
	"github.com/commonly/runtime/internal/dynamodblocal"
	"github.com/commonly/runtime/shared/metrics"
	"github.com/commonly/runtime/shared/runs"
	"github.com/commonly/runtime/shared/store"
	"github.com/commonly/runtime/shared/tablekeys"
	"github.com/commonly/runtime/shared/turns"
	"github.com/commonly/runtime/shared/utcday"
)

var harnessTables = store.Tables{State: "state", Runs: "runs"}

// harness is the alarm function as main wires it (app.LoadConfig and
// app.Build), with the real SDK clients against the embedded DynamoDB and
// the EventBridge stand-in.
type harness struct {
	t       *testing.T
	db      *dynamodb.Client // the function's, its calls counted
	raw     *dynamodb.Client // the tests' own
	store   *store.Dynamo
	bus     *eventbridgelocal.Server
	h       *handler.Handler
	calls   *callCounter
	logs    bytes.Buffer
	metrics bytes.Buffer
	now     time.Time
}

func newHarness(t *testing.T, env map[string]string) *harness {
	t.Helper()
	srv, err := dynamodblocal.StartWithTables(context.Background(), "127.0.0.1:0", harnessTables)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	bus, err := eventbridgelocal.Start(eventbridgelocal.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = bus.Close() })
	hs := &harness{t: t, bus: bus, calls: &callCounter{}, now: time.Date(2026, 12, 2, 23, 0, 0, 0, time.UTC)}
	hs.db = srv.Client(hs.calls.option())
	hs.raw = srv.Client()
	if hs.store, err = store.New(store.Config{DB: hs.raw, Tables: harnessTables}); err != nil {
		t.Fatal(err)
	}

	vars := map[string]string{"STATE_TABLE": harnessTables.State, "EVENT_BUS_NAME": "commonly-alarms"}
	maps.Copy(vars, env)
	cfg, err := app.LoadConfig(func(k string) string { return vars[k] })
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	now := func() time.Time { mu.Lock(); defer mu.Unlock(); return hs.now }
	emf, err := metrics.New(metrics.Config{Writer: &hs.metrics, Now: now})
	if err != nil {
		t.Fatal(err)
	}
	hs.h, err = app.Build(cfg, app.Deps{
		Dynamo: hs.db, EventBridge: eventbridge.New(bus.Client().Options(), func(o *eventbridge.Options) {
			o.APIOptions = append(o.APIOptions, awscalls.Middleware(hs.calls.record))
		}), Now: now,
		Log:     slog.New(slog.NewJSONHandler(&hs.logs, nil)),
		Metrics: emf,
	})
	if err != nil {
		t.Fatal(err)
	}
	return hs
}

// loadRecords reads event files into one batch.
func loadRecords(t *testing.T, files ...string) []events.DynamoDBEventRecord {
	t.Helper()
	var all []events.DynamoDBEventRecord
	for _, f := range files {
		b, err := os.ReadFile(filepath.Join("..", "testdata", f))
		if err != nil {
			t.Fatal(err)
		}
		var ev events.DynamoDBEvent
		if err := json.Unmarshal(b, &ev); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		all = append(all, ev.Records...)
	}
	return all
}

// invoke hands the event files to the handler as one batch.
func (hs *harness) invoke(files ...string) events.DynamoDBEventResponse {
	hs.t.Helper()
	return hs.handle(loadRecords(hs.t, files...))
}

func (hs *harness) handle(records []events.DynamoDBEventRecord) events.DynamoDBEventResponse {
	hs.t.Helper()
	// Through JSON, as Lambda passes it.
	payload, err := json.Marshal(events.DynamoDBEvent{Records: records})
	if err != nil {
		hs.t.Fatal(err)
	}
	var ev events.DynamoDBEvent
	if err := json.Unmarshal(payload, &ev); err != nil {
		hs.t.Fatal(err)
	}
	resp, err := hs.h.Handle(context.Background(), ev)
	if err != nil {
		hs.t.Fatalf("Handle returned an error: %v", err)
	}
	return resp
}

// usage is a user-day's usage item.
type usage struct {
	cost, turns int64
	alarmID     string
	exists      bool
}

func (hs *harness) usage(user, day string) usage {
	hs.t.Helper()
	k := tablekeys.UsageOnDay(user, day)
	out, err := hs.raw.GetItem(context.Background(), &dynamodb.GetItemInput{TableName: aws.String(harnessTables.State), ConsistentRead: aws.Bool(true),
		Key: map[string]types.AttributeValue{tablekeys.PK: &types.AttributeValueMemberS{Value: k.PK}, tablekeys.SK: &types.AttributeValueMemberS{Value: k.SK}}})
	if err != nil {
		hs.t.Fatal(err)
	}
	u := usage{exists: len(out.Item) > 0}
	if n, ok := out.Item["costMicros"].(*types.AttributeValueMemberN); ok {
		u.cost, _ = strconv.ParseInt(n.Value, 10, 64)
	}
	if n, ok := out.Item["turns"].(*types.AttributeValueMemberN); ok {
		u.turns, _ = strconv.ParseInt(n.Value, 10, 64)
	}
	if s, ok := out.Item["spendAlarmId"].(*types.AttributeValueMemberS); ok {
		u.alarmID = s.Value
	}
	return u
}

// admit counts n turns for the user on the day, as the turn function's
// admission does, so that the day's usage item has its turns.
func (hs *harness) admit(user, day string, n int) {
	hs.t.Helper()
	at, err := time.Parse(utcday.Layout, day)
	if err != nil {
		hs.t.Fatal(err)
	}
	for i := range n {
		id := user + "-admitted-" + strconv.Itoa(i)
		r := &runs.Run{RunID: id, UserID: user, InstallID: "i", Day: day, CreatedAt: at, Status: runs.StatusQueued, Steps: []runs.Step{}}
		if res, err := hs.store.Admit(context.Background(), turns.Admission{Plan: turns.PlanFree, Run: r, Limit: 30, Now: at}); err != nil || !res.Admitted {
			hs.t.Fatalf("admit: %+v %v", res, err)
		}
	}
}

func failures(resp events.DynamoDBEventResponse) []string {
	out := []string{}
	for _, f := range resp.BatchItemFailures {
		out = append(out, f.ItemIdentifier)
	}
	return out
}

// callCounter records the function's AWS calls (awscalls, on its
// clients) and counts its DynamoDB calls by operation, once per call the
// code makes (the SDK's own retries are not counted again).
type callCounter struct{ rec awscalls.Recorder }

// record keeps a call for take and for the package's recording.
func (c *callCounter) record(call awscalls.Call) {
	c.rec.Record(call)
	recorded.Record(call)
}

func (c *callCounter) option() func(*dynamodb.Options) {
	return func(o *dynamodb.Options) { o.APIOptions = append(o.APIOptions, awscalls.Middleware(c.record)) }
}

// take returns the DynamoDB calls since the last take, by operation.
func (c *callCounter) take() map[string]int {
	var dynamo []awscalls.Call
	for _, call := range c.rec.Take() {
		if call.Service == "dynamodb" {
			dynamo = append(dynamo, call)
		}
	}
	return awscalls.Count(dynamo)
}
