package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/commonly/runtime/internal/dynamodblocal"
	"github.com/commonly/runtime/shared/store"
	"github.com/commonly/runtime/shared/turns"
)

// Issue 23: a session (SESSION=dir) keeps the embedded DynamoDB's items
// between invokes: what one invoke's store wrote, the next one's store
// reads, through a new server as each `make invoke` starts one.
func TestSessionKeepsTheTablesBetweenInvokes(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	tables := store.Tables{State: "state", Runs: "runs"}
	start := func() (*dynamodblocal.Server, *store.Dynamo) {
		t.Helper()
		db, err := dynamodblocal.StartWithTables(ctx, "127.0.0.1:0", tables)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = db.Close() })
		st, err := store.New(store.Config{DB: db.Client(), Tables: tables})
		if err != nil {
			t.Fatal(err)
		}
		return db, st
	}

	db, st := start()
	if n, err := loadState(ctx, db.URL, dir); err != nil || n != 0 {
		t.Fatalf("a new session restored %d items: %v", n, err)
	}
	in := &turns.Install{InstallID: "inst-1", UserID: "user-1", PodID: "pod-1", AgentName: "helper", InstanceID: "inst-1", Engine: turns.Native}
	if err := st.PutInstall(ctx, in); err != nil {
		t.Fatal(err)
	}
	if err := st.SetPlan(ctx, "user-1", turns.PlanPro, time.Now()); err != nil {
		t.Fatal(err)
	}
	if err := saveState(ctx, db.URL, dir, tables.State, tables.Runs); err != nil {
		t.Fatal(err)
	}

	db2, st2 := start()
	if n, err := loadState(ctx, db2.URL, dir); err != nil || n < 2 {
		t.Fatalf("restored %d items: %v", n, err)
	}
	got, err := st2.GetInstall(ctx, "inst-1")
	if err != nil || got.UserID != "user-1" || got.AgentName != "helper" {
		t.Fatalf("install after the restore: %+v %v", got, err)
	}
	if p, err := st2.GetPlan(ctx, "user-1"); err != nil || p != turns.PlanPro {
		t.Errorf("plan after the restore: %v %v", p, err)
	}
}

// RUN_ID points get-run.json and dispatch.json at a run of the session.
func TestWithRunID(t *testing.T) {
	for _, c := range []struct{ event, want string }{
		{`{"dispatch":{"runId":"run_0123"}}`, `{"dispatch":{"runId":"run_new"}}`},
		{`{"rawPath":"/v1/runs/run_0123","pathParameters":{"runId":"run_0123"}}`, `{"rawPath":"/v1/runs/run_new","pathParameters":{"runId":"run_new"}}`},
	} {
		got, err := withRunID([]byte(c.event), "run_new")
		if err != nil || string(got) != c.want {
			t.Errorf("withRunID(%s) = %s, %v", c.event, got, err)
		}
	}
	if _, err := withRunID([]byte(`{"version":"2.0"}`), "run_new"); err == nil || !strings.Contains(err.Error(), "names no run") {
		t.Errorf("an event without a run: %v", err)
	}
	var body = json.RawMessage(`{"statusCode":202,"body":"{\"runId\":\"run_abc\",\"status\":\"queued\"}"}`)
	if id := createdRun(body); id != "run_abc" {
		t.Errorf("createdRun = %q", id)
	}
}
