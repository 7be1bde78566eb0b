package localstack_test

import (
	"context"
	"errors"
	"os/exec"
	"sync"
	"testing"
	"time"

	"github.com/commonly/runtime/infra/awslocal/apigatewaylocal"
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

// TestLocalReaperRedispatchesAStoppedWorkersRun: with turns dispatched
// through the Lambda stand-in, the local reaper is given the turn
// function (TURN_FUNCTION_NAME) as the stack gives it: a run whose
// worker stopped with attempts left (its lease lapsed) is re-dispatched
// there by a sweep, and the next attempt resumes it to its end.
func TestLocalReaperRedispatchesAStoppedWorkersRun(t *testing.T) {
	ctx := context.Background()
	secret := []byte("reaper-secret")
	pods := localstack.NewPods()
	pods.Add("demo-pod", "demo-user", "hello")
	st := start(t, localstack.Config{
		Env:       map[string]string{"LLM_MODE": "offline", "SANDBOX": "local"},
		Functions: []localstack.Function{localstack.Turn, localstack.Reaper}, Pods: pods, JWTSecret: secret,
	})
	if st.ReaperConfig.TurnFunction != st.Env["AWS_LAMBDA_FUNCTION_NAME"] {
		t.Fatalf("the reaper's turn function %q, want %q", st.ReaperConfig.TurnFunction, st.Env["AWS_LAMBDA_FUNCTION_NAME"])
	}
	admin, _ := apigatewaylocal.MintServiceToken(secret, apigatewaylocal.ServiceSubject, time.Now())
	if status, body, err := call(ctx, "PUT", st.APIURL+"/v1/installs/demo-install", admin, nil, `{"userId":"demo-user","podId":"demo-pod","agentName":"demo-agent"}`); err != nil || status != 201 {
		t.Fatalf("install: %d %s %v", status, body, err)
	}
	sts, err := store.New(store.Config{DB: st.Dynamo(), Tables: st.Tables})
	if err != nil {
		t.Fatal(err)
	}
	// The first attempt's worker claimed the run and stopped: its lease
	// lapsed with two attempts left, past the reaper's first look.
	now := time.Now().Add(-turns.CheckAfter - time.Minute)
	run := &runs.Run{RunID: "run-stopped", InstallID: "demo-install", UserID: "demo-user", Status: runs.StatusQueued,
		Day: utcday.Of(now), CreatedAt: now, Message: "Hello!", RequestHash: "h", Engine: "native", Steps: []runs.Step{},
		MaxAttempts: turns.DefaultMaxAttempts}
	if res, err := sts.Admit(ctx, turns.Admission{Plan: turns.PlanFree, Run: run, Limit: 30, Now: now}); err != nil || !res.Admitted {
		t.Fatalf("admit: %+v %v", res, err)
	}
	if _, err := sts.ClaimRun(ctx, run.RunID, now.Add(time.Second)); err != nil {
		t.Fatal(err)
	}
	s := st.Sweep(ctx)
	if s.Err != nil || s.Result.RunsRedispatched != 1 || s.Result.RunsInterrupted != 0 {
		t.Fatalf("sweep: %+v %v", s.Result, s.Err)
	}
	var got *runs.Run
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if got, err = sts.GetRun(ctx, run.RunID); err == nil && got.Status.Final() {
			break
		}
	}
	if got == nil || got.Status != runs.StatusSucceeded || got.Attempts != 2 || got.FinalMessage == "" {
		t.Fatalf("the re-dispatched run: %+v %v", got, err)
	}
}
