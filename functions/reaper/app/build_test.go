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
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/commonly/runtime/functions/reaper/app"
	"github.com/commonly/runtime/internal/dynamodblocal"
	"github.com/commonly/runtime/shared/sandbox/e2b"
	"github.com/commonly/runtime/shared/sandbox/e2b/e2btest"
	"github.com/commonly/runtime/shared/store"
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
