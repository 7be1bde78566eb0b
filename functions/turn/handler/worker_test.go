package handler_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/commonly/runtime/shared/dispatch"
	"github.com/commonly/runtime/shared/runs"
	"github.com/commonly/runtime/shared/turns"
)

// Every path ends in a final status: an engine that panics or returns
// without finishing still leaves a final, recorded run.
func TestEveryPathReachesAFinalStatus(t *testing.T) {
	cases := []struct {
		name   string
		set    func(*nativeStub)
		status runs.Status
		kind   runs.ErrorKind
	}{
		{"engine panics", func(n *nativeStub) { n.panics = true }, runs.StatusFailed, runs.ErrUnknown},
		{"engine returns without finishing", func(n *nativeStub) { n.unfinish = true }, runs.StatusFailed, runs.ErrUnknown},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := newEnv(t, envOpts{})
			e.install(t, "inst-1", "user-1", nil)
			c.set(e.native)
			r := e.turn(t, "inst-1", "user-1", "hi", "")
			id := decode[map[string]string](t, r.Body)["runId"]
			run := decode[runs.Run](t, e.do(t, withParam(event(t, "get-run.json"), "runId", id)).Body)
			if run.Status != c.status || run.ErrorKind != c.kind || run.CompletedAt == nil {
				t.Fatalf("run = %s %s completed=%v", run.Status, run.ErrorKind, run.CompletedAt)
			}
		})
	}
}

// A worker that stopped leaves its run running under its lease. Lambda's
// retry of the dispatch while the lease lives fails, so that Lambda tries
// again later; once it lapsed, the retry takes the run over (attempt 2)
// and the turn runs to its end; one past its attempts is closed
// interrupted and the turn given back.
func TestRetriedDispatchResumesAStoppedRun(t *testing.T) {
	var fl fakeLambda
	e := newEnv(t, envOpts{dispatcher: func(*turns.Worker) turns.Dispatcher {
		return dispatch.Lambda{Client: &fl, FunctionName: "turn-fn"}
	}})
	e.install(t, "inst-1", "user-1", nil)
	id := decode[map[string]string](t, e.turn(t, "inst-1", "user-1", "hi", "").Body)["runId"]
	// The first invocation claimed the run, then its process died.
	if _, err := e.st.ClaimRun(context.Background(), id, e.clock.Now()); err != nil {
		t.Fatal(err)
	}
	claimedAt := e.clock.Now()
	e.clock.Set(claimedAt.Add(time.Second))
	if _, err := e.h.Invoke(context.Background(), fl.payloads[0]); !errors.Is(err, turns.ErrLeaseHeld) {
		t.Fatalf("a retry within the lease: %v", err)
	}
	if run := decode[runs.Run](t, e.do(t, withParam(event(t, "get-run.json"), "runId", id)).Body); run.Status != runs.StatusRunning {
		t.Fatalf("an early retry changed the run: %s", run.Status)
	}
	// Lambda's retry a minute later.
	e.clock.Set(claimedAt.Add(time.Minute))
	if _, err := e.h.Invoke(context.Background(), fl.payloads[0]); err != nil {
		t.Fatal(err)
	}
	run := decode[runs.Run](t, e.do(t, withParam(event(t, "get-run.json"), "runId", id)).Body)
	if run.Status != runs.StatusSucceeded || run.Attempts != 2 || e.native.calls != 1 {
		t.Fatalf("resumed run = %s, %d attempts, ran %d times", run.Status, run.Attempts, e.native.calls)
	}
}
