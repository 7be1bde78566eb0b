package app_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	lambdasvc "github.com/aws/aws-sdk-go-v2/service/lambda"

	"github.com/commonly/runtime/functions/reaper/app"
	"github.com/commonly/runtime/functions/reaper/handler"
	"github.com/commonly/runtime/infra/awslocal/lambdalocal"
	"github.com/commonly/runtime/internal/dynamodblocal"
	"github.com/commonly/runtime/shared/dispatch"
	"github.com/commonly/runtime/shared/runs"
	"github.com/commonly/runtime/shared/sandbox/e2b"
	"github.com/commonly/runtime/shared/sandbox/e2b/e2btest"
	"github.com/commonly/runtime/shared/store"
	"github.com/commonly/runtime/shared/turns"
)

// The production wiring, from the configuration to the handler, against
// the embedded DynamoDB and the fake E2B: the scheduled event file sweeps
// this stage's expired sandbox only; a kill E2B refuses is logged with
// its sandbox, and the key never.
func TestBuildSweepsThroughTheProductionWiring(t *testing.T) {
	ctx := context.Background()
	tables := store.Tables{State: "state", Runs: "runs"}
	db, err := dynamodblocal.StartWithTables(ctx, "127.0.0.1:0", tables)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	f := e2btest.Start(t)
	now := time.Now()
	md := e2b.Metadata("dev", "run-1", "u", "i", now)
	old := f.Seed(e2btest.Seeded{StartedAt: now.Add(-time.Hour), EndAt: now.Add(time.Hour), Metadata: md})
	young := f.Seed(e2btest.Seeded{StartedAt: now, Metadata: md})
	failing := f.Seed(e2btest.Seeded{StartedAt: now.Add(-time.Hour), EndAt: now.Add(time.Hour), Metadata: md})
	f.FailKill(failing, http.StatusInternalServerError)
	other := f.Seed(e2btest.Seeded{StartedAt: now.Add(-time.Hour), EndAt: now.Add(time.Hour), Metadata: e2b.Metadata("prod", "r", "u", "i", now)})

	cfg, err := app.LoadConfig(func(k string) string {
		return map[string]string{"STAGE": "dev", "STATE_TABLE": tables.State, "RUNS_TABLE": tables.Runs,
			"E2B_API_KEY": e2btest.DefaultAPIKey, "E2B_API_URL": f.URL}[k]
	})
	if err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	built, err := app.Build(cfg, app.Deps{Dynamo: db.Client(func(o *dynamodb.Options) { o.APIOptions = append(o.APIOptions, recorded.APIOption) }), Log: slog.New(slog.NewJSONHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile("../testdata/scheduled.json")
	if err != nil {
		t.Fatal(err)
	}
	var ev events.EventBridgeEvent
	if err := json.Unmarshal(raw, &ev); err != nil {
		t.Fatal(err)
	}
	res, err := built.Handler.Handle(ctx, ev)
	if err != nil {
		t.Fatal(err)
	}
	if res.Killed != 1 || res.KillFailures != 1 || res.Listed != 3 {
		t.Fatalf("result %+v", res)
	}
	if _, ok := f.Sandbox(old); ok {
		t.Error("the expired sandbox survived")
	}
	for _, id := range []string{young, failing, other} {
		if _, ok := f.Sandbox(id); !ok {
			t.Errorf("%s was killed", id)
		}
	}
	if !strings.Contains(logs.String(), `"reaper sweep"`) || !strings.Contains(logs.String(), failing) {
		t.Errorf("log:\n%s", logs.String())
	}
	if strings.Contains(logs.String(), e2btest.DefaultAPIKey) {
		t.Error("the E2B key reached the log")
	}
}

// A run whose worker stopped with attempts left is dispatched again to
// the turn function (through Lambda's Invoke, asynchronously), once per
// turns.RedispatchHold; past its life it is closed interrupted.
func TestSweepRedispatchesAStoppedRun(t *testing.T) {
	ctx := context.Background()
	tables := store.Tables{State: "state", Runs: "runs"}
	db, err := dynamodblocal.StartWithTables(ctx, "127.0.0.1:0", tables)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	lam, err := lambdalocal.StartTaking("TurnFunction")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = lam.Close() })
	st, err := store.New(store.Config{DB: db.Client(), Tables: tables})
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	run := &runs.Run{RunID: "run-1", InstallID: "i1", UserID: "u1", Status: runs.StatusQueued, Day: "2026-12-02", CreatedAt: t0,
		Message: "hi", Engine: "native", MaxAttempts: turns.DefaultMaxAttempts, Steps: []runs.Step{}}
	if res, err := st.Admit(ctx, turns.Admission{Plan: turns.PlanFree, Run: run, Limit: 30, Now: t0}); err != nil || !res.Admitted {
		t.Fatal(res, err)
	}
	if _, err := st.ClaimRun(ctx, "run-1", t0); err != nil {
		t.Fatal(err)
	}
	cfg, err := app.LoadConfig(func(k string) string {
		return map[string]string{"STAGE": "dev", "STATE_TABLE": tables.State, "RUNS_TABLE": tables.Runs, "SANDBOX": "local",
			"TURN_FUNCTION_NAME": "TurnFunction"}[k]
	})
	if err != nil {
		t.Fatal(err)
	}
	now := t0.Add(time.Minute)
	lambdaClient := lambdasvc.NewFromConfig(aws.Config{Region: "us-east-1", Credentials: credentials.NewStaticCredentialsProvider("k", "s", "")},
		func(o *lambdasvc.Options) {
			o.BaseEndpoint = aws.String(lam.URL)
			o.APIOptions = append(o.APIOptions, recorded.APIOption)
		})
	built, err := app.Build(cfg, app.Deps{
		Dynamo: db.Client(func(o *dynamodb.Options) { o.APIOptions = append(o.APIOptions, recorded.APIOption) }),
		Lambda: lambdaClient, Now: func() time.Time { return now }, Log: slog.New(slog.DiscardHandler),
	})
	if err != nil {
		t.Fatal(err)
	}
	sweep := func() handler.Result {
		t.Helper()
		res, err := built.Handler.Handle(ctx, events.EventBridgeEvent{})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	if res := sweep(); res.RunsRedispatched != 1 || res.RunsInterrupted != 0 {
		t.Fatalf("first sweep %+v", res)
	}
	sent := lam.Take()
	var ev dispatch.Event
	if len(sent) != 1 || json.Unmarshal(sent[0].Payload, &ev) != nil || ev.Dispatch == nil || ev.Dispatch.RunID != "run-1" {
		t.Fatalf("dispatched %+v", sent)
	}
	// The next sweep within the hold leaves it to that invocation.
	now = now.Add(turns.RedispatchHold - time.Second)
	if res := sweep(); res.RunsRedispatched != 0 || len(lam.Take()) != 0 {
		t.Fatalf("a sweep within the hold: %+v", res)
	}
	now = now.Add(2 * time.Second)
	if res := sweep(); res.RunsRedispatched != 1 || len(lam.Take()) != 1 {
		t.Fatalf("a sweep past the hold: %+v", res)
	}
	// Past its life, nobody having taken it over, it is closed.
	now = t0.Add(turns.RunMaxLife + time.Second)
	if res := sweep(); res.RunsInterrupted != 1 || res.RunsRedispatched != 0 {
		t.Fatalf("a sweep past the run's life: %+v", res)
	}
	if got, err := st.GetRun(ctx, "run-1"); err != nil || got.Status != runs.StatusInterrupted {
		t.Fatalf("run %+v %v", got, err)
	}
}
