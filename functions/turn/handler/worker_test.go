package handler_test

import (
	"context"
	"testing"
	"time"

	"github.com/commonly/runtime/functions/turn/handler"
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

// A worker that timed out leaves its run running; Lambda's retry of the
// dispatch, a minute later, closes it as interrupted and gives the turn
// back. (A worker that died early gets a retry that finds the run in its
// lifetime and leaves it: the reaper closes it, shared/turns.)
func TestRetriedDispatchClosesAnAbandonedRun(t *testing.T) {
	var fl fakeLambda
	e := newEnv(t, envOpts{dispatcher: func(*turns.Worker) turns.Dispatcher {
		return handler.LambdaDispatcher{Client: &fl, FunctionName: "turn-fn"}
	}})
	e.install(t, "inst-1", "user-1", nil)
	id := decode[map[string]string](t, e.turn(t, "inst-1", "user-1", "hi", "").Body)["runId"]
	// The first invocation claimed the run, then its process died.
	if _, err := e.st.ClaimRun(context.Background(), id, e.clock.Now()); err != nil {
		t.Fatal(err)
	}
	claimedAt := e.clock.Now()
	// A retry within the turn's lifetime leaves it alone.
	e.clock.Set(claimedAt.Add(time.Minute))
	if _, err := e.h.Invoke(context.Background(), fl.payloads[0]); err != nil {
		t.Fatal(err)
	}
	if run := decode[runs.Run](t, e.do(t, withParam(event(t, "get-run.json"), "runId", id)).Body); run.Status != runs.StatusRunning {
		t.Fatalf("early retry changed the run: %s", run.Status)
	}
	// Lambda's retry a minute after the invocation timed out.
	e.clock.Set(claimedAt.Add(turns.MaxTurnDuration + time.Minute))
	if _, err := e.h.Invoke(context.Background(), fl.payloads[0]); err != nil {
		t.Fatal(err)
	}
	run := decode[runs.Run](t, e.do(t, withParam(event(t, "get-run.json"), "runId", id)).Body)
	if run.Status != runs.StatusInterrupted || run.ErrorKind != runs.ErrInterrupted || !run.Refunded {
		t.Fatalf("stale run = %s %s refunded=%v", run.Status, run.ErrorKind, run.Refunded)
	}
	if e.native.calls != 0 {
		t.Error("a claimed run must never be run again")
	}
	if u := decode[map[string]any](t, e.do(t, event(t, "usage.json")).Body); u["turnsUsed"] != 0.0 {
		t.Errorf("usage = %v", u)
	}
}
