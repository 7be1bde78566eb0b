package localstack_test

import (
	"context"
	"errors"
	"os/exec"
	"sync"
	"testing"
	"time"

	"github.com/commonly/runtime/infra/localstack"
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
// local provider (a real bubblewrap), invoked on its ticker. A turn's
// worker died with its session open: the first sweep past its lifetime
// kills the session and marks its record, and closes the run interrupted
// (refunded: no model call answered); a young session is left alone.
func TestLocalReaperOnItsTicker(t *testing.T) {
	if _, err := exec.LookPath("bwrap"); err != nil {
		t.Skip("bwrap is not installed (apt-get install bubblewrap)")
	}
	ctx := context.Background()
	var mu sync.Mutex
	now := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	sweeps := make(chan localstack.Sweep, 100)
	st := start(t, localstack.Config{
		Env:       map[string]string{"LLM_MODE": "offline", "SANDBOX": "local"},
		Functions: []localstack.Function{localstack.Turn, localstack.Reaper}, Now: clock,
		ReaperEvery: 10 * time.Millisecond, OnSweep: func(s localstack.Sweep) { sweeps <- s },
	})
	// Sweeps before the clock moves find nothing.
	<-sweeps
	box := st.Sandbox
	db := st.Dynamo()
	tables := st.Tables
	sts, err := store.New(store.Config{DB: db, Tables: tables})
	if err != nil {
		t.Fatal(err)
	}

	// The dead worker's turn: admitted, claimed, its session created and
	// recorded as the run-code tool does.
	run := &runs.Run{RunID: "run-dead", InstallID: "demo-install", UserID: "demo-user", Status: runs.StatusQueued,
		Day: utcday.Of(now), CreatedAt: now, Message: "m", RequestHash: "h", Engine: "native", Steps: []runs.Step{}}
	if res, err := sts.Admit(ctx, turns.Admission{Plan: turns.PlanFree, Run: run, Limit: 30, Now: now}); err != nil || !res.Admitted {
		t.Fatalf("admit: %+v %v", res, err)
	}
	if _, err := sts.ClaimRun(ctx, run.RunID, now); err != nil {
		t.Fatal(err)
	}
	dead, err := box.Create(ctx, sandbox.Meta{RunID: run.RunID, UserID: run.UserID})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = dead.Kill(context.Background()) })
	if err := sts.SandboxCreated(ctx, sandbox.NewRecord(local.ProviderName, dead.ID(), sandbox.Meta{RunID: run.RunID, UserID: run.UserID}, now)); err != nil {
		t.Fatal(err)
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
	var rep localstack.Sweep
	for deadline := time.After(30 * time.Second); rep.Result.Killed == 0 && rep.Err == nil; {
		select {
		case rep = <-sweeps:
		case <-deadline:
			t.Fatal("no sweep killed the session")
		}
	}
	if rep.Err != nil {
		t.Fatalf("sweep: %v", rep.Err)
	}
	// The session is found by the provider, the record and the run: one
	// kill. The runs half of the sweep runs beside the listing and may
	// kill it before the provider lists it: the young one is listed, the
	// dead one once or not at all.
	if r := rep.Result; r.Killed != 1 || r.RunsInterrupted != 1 || r.RunsRefunded != 1 || r.Listed < 1 || r.Listed > 2 {
		t.Fatalf("result %+v", rep.Result)
	}
	if _, err := dead.Execute(ctx, sandbox.Python, "1"); !errors.Is(err, sandbox.ErrLost) {
		t.Errorf("the dead worker's session still runs code: %v", err)
	}
	for live, err := range box.ListSandboxes(ctx, st.Env["STAGE"]) {
		if err != nil || len(live) != 1 || live[0].ID != young.ID() {
			t.Errorf("live sessions %v %v, want only the young one", live, err)
		}
	}
	if rec, _, _ := storetest.Sandbox(ctx, db, tables.State, dead.ID()); rec.Status != sandbox.StatusKilled {
		t.Errorf("record %+v", rec)
	}
	if got, err := sts.GetRun(ctx, run.RunID); err != nil || got.Status != runs.StatusInterrupted || !got.Refunded {
		t.Errorf("run %+v %v", got, err)
	}
}
