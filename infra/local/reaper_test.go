package main

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/commonly/runtime/functions/turn/app"
	"github.com/commonly/runtime/internal/dynamodblocal"
	"github.com/commonly/runtime/shared/reaper"
	"github.com/commonly/runtime/shared/runs"
	"github.com/commonly/runtime/shared/sandbox"
	"github.com/commonly/runtime/shared/sandbox/local"
	"github.com/commonly/runtime/shared/store"
	"github.com/commonly/runtime/shared/store/storetest"
	"github.com/commonly/runtime/shared/turns"
	"github.com/commonly/runtime/shared/utcday"
)

// TestLocalReaperOnItsTicker runs the reaper as `make run` wires it: the
// reaper function's wiring on the stack's DynamoDB, sharing the turn's
// local provider (a real bubblewrap), swept by its ticker. A turn's
// worker died with its session open: the first sweep past its lifetime
// kills the session and marks its record, and closes the run interrupted
// (refunded: no model call answered); a young session is left alone.
func TestLocalReaperOnItsTicker(t *testing.T) {
	if _, err := exec.LookPath("bwrap"); err != nil {
		t.Skip("bwrap is not installed (apt-get install bubblewrap)")
	}
	ctx := context.Background()
	env := localEnv(func(k string) string { return map[string]string{"REAPER_INTERVAL": "10ms"}[k] })
	cfg, err := app.LoadConfig(func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	db, err := dynamodblocal.StartWithTables(ctx, "127.0.0.1:0", cfg.Tables)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	st, err := store.New(store.Config{DB: db.Client(), Tables: cfg.Tables})
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	now := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	box := local.New(local.Config{Now: clock})
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	_, lam, err := buildTurn(ctx, cfg, app.Deps{Dynamo: db.Client(), Log: log, Now: clock, LocalSandbox: box})
	if err != nil {
		t.Fatal(err)
	}
	if lam != nil {
		defer lam.Close()
	}

	// The dead worker's turn: admitted, claimed, its session created and
	// recorded as the run-code tool does.
	run := &runs.Run{RunID: "run-dead", InstallID: "demo-install", UserID: "demo-user", Status: runs.StatusQueued,
		Day: utcday.Of(now), CreatedAt: now, Message: "m", RequestHash: "h", Engine: "native", Steps: []runs.Step{}}
	if res, err := st.Admit(ctx, turns.Admission{Plan: turns.PlanFree, Run: run, Limit: 30, Now: now}); err != nil || !res.Admitted {
		t.Fatalf("admit: %+v %v", res, err)
	}
	if _, err := st.ClaimRun(ctx, run.RunID, now); err != nil {
		t.Fatal(err)
	}
	dead, err := box.Create(ctx, sandbox.Meta{RunID: run.RunID, UserID: run.UserID})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = dead.Kill(context.Background()) })
	if err := st.SandboxCreated(ctx, sandbox.NewRecord(local.ProviderName, dead.ID(), sandbox.Meta{RunID: run.RunID, UserID: run.UserID}, now)); err != nil {
		t.Fatal(err)
	}

	var out bytes.Buffer
	r, err := newLocalReaper(env, db.Client(), box, log, clock, &out)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(r.label(), "every 10ms (REAPER_INTERVAL)") || !strings.Contains(r.label(), "local bubblewrap") {
		t.Errorf("label %q", r.label())
	}
	sweeps := make(chan reaper.Report, 100)
	r.onSweep = func(rep reaper.Report, err error) {
		if err != nil {
			t.Errorf("sweep: %v", err)
		}
		sweeps <- rep
	}
	// Six minutes later: the run is abandoned, its session past its
	// lifetime; a session created now is young.
	mu.Lock()
	now = now.Add(6 * time.Minute)
	mu.Unlock()
	young, err := box.Create(ctx, sandbox.Meta{RunID: "run-live"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = young.Kill(context.Background()) })
	r.start(ctx)
	defer r.close()
	var rep reaper.Report
	select {
	case rep = <-sweeps:
	case <-time.After(30 * time.Second):
		t.Fatal("no sweep")
	}
	// The session is found by the provider, the record and the run: one
	// kill. The runs half of the sweep runs beside the listing and may
	// kill it before the provider lists it: the young one is listed, the
	// dead one once or not at all.
	if rep.Killed != 1 || rep.RunsInterrupted != 1 || rep.RunsRefunded != 1 || rep.Listed < 1 || rep.Listed > 2 {
		t.Fatalf("report %+v", rep)
	}
	if _, err := dead.Execute(ctx, sandbox.Python, "1"); !errors.Is(err, sandbox.ErrLost) {
		t.Errorf("the dead worker's session still runs code: %v", err)
	}
	if live := box.Live(); len(live) != 1 || live[0].ID != young.ID() {
		t.Errorf("live sessions %v, want only the young one", live)
	}
	if rec, _, _ := storetest.Sandbox(ctx, db.Client(), cfg.Tables.State, dead.ID()); rec.Status != sandbox.StatusKilled {
		t.Errorf("record %+v", rec)
	}
	if got, err := st.GetRun(ctx, run.RunID); err != nil || got.Status != runs.StatusInterrupted || !got.Refunded {
		t.Errorf("run %+v %v", got, err)
	}
	r.close()
	if !strings.Contains(out.String(), "reaper <- 1 sandbox(es) killed") || !strings.Contains(out.String(), "1 run(s) closed interrupted (1 refunded)") {
		t.Errorf("output %q", out.String())
	}
}

func TestReaperInterval(t *testing.T) {
	for v, want := range map[string]time.Duration{"": time.Minute, "30s": 30 * time.Second, "90": 90 * time.Second} {
		if got, err := parseInterval(v); err != nil || got != want {
			t.Errorf("%q: %v, %v", v, got, err)
		}
	}
	for _, v := range []string{"0", "-1s", "soon"} {
		if _, err := parseInterval(v); err == nil || !strings.Contains(err.Error(), "REAPER_INTERVAL") {
			t.Errorf("%q: %v", v, err)
		}
	}
}
