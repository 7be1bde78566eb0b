package handler_test

import (
	"context"
	"testing"
	"time"

	"github.com/commonly/runtime/shared/dispatch"
	"github.com/commonly/runtime/shared/runs"
	"github.com/commonly/runtime/shared/turns"
)

// POST /v1/runs/{runId}/cancel, at each point of a run's life: queued (cancelled at once and
// given back), running (asked: 202, twice the same), by another user
// (404), with its answer recorded for the pod (too late), final (no
// error); a stopped worker's run asked to stop is closed cancelled, not
// resumed.
func TestCancelARunAtEachPointOfItsLife(t *testing.T) {
	var fl fakeLambda
	e := newEnv(t, envOpts{dispatcher: func(*turns.Worker) turns.Dispatcher {
		return dispatch.Lambda{Client: &fl, FunctionName: "turn-fn"}
	}})
	e.install(t, "inst-1", "user-1", nil)
	cancel := func(runID, user string) (int, map[string]string) {
		t.Helper()
		resp := e.do(t, asUser(t, withParam(event(t, "cancel-run.json"), "runId", runID), user))
		if resp.StatusCode >= 300 {
			return resp.StatusCode, nil
		}
		return resp.StatusCode, decode[map[string]string](t, resp.Body)
	}
	submit := func() string {
		t.Helper()
		return decode[map[string]string](t, e.turn(t, "inst-1", "user-1", "hi", "").Body)["runId"]
	}
	usage := func() float64 {
		return decode[map[string]any](t, e.do(t, event(t, "usage.json")).Body)["turnsUsed"].(float64)
	}

	// Queued: cancelled now, the turn given back; the dispatch then finds
	// it final and runs nothing.
	queued := submit()
	if code, body := cancel(queued, "user-1"); code != 200 || body["cancel"] != "cancelled" || body["status"] != "cancelled" {
		t.Fatalf("cancel a queued run: %d %v", code, body)
	}
	if u := usage(); u != 0 {
		t.Errorf("turns used %v after a queued cancel", u)
	}
	if _, err := e.h.Invoke(context.Background(), fl.payloads[0]); err != nil || e.native.calls != 0 {
		t.Fatalf("the cancelled run's dispatch: %v, ran %d", err, e.native.calls)
	}

	// Running (claimed by a worker that then stopped): asked, twice alike;
	// another user's cancel is a 404.
	running := submit()
	claimed, err := e.st.ClaimRun(context.Background(), running, e.clock.Now())
	if err != nil {
		t.Fatal(err)
	}
	if code, _ := cancel(running, "user-2"); code != 404 {
		t.Fatalf("another user's cancel: %d", code)
	}
	for range 2 {
		if code, body := cancel(running, "user-1"); code != 202 || body["cancel"] != "requested" || body["status"] != "running" {
			t.Fatalf("cancel a running run: %d %v", code, body)
		}
	}
	// Its worker's next write is refused for it.
	if err := e.st.CheckpointRun(context.Background(), claimed, nil); err == nil {
		t.Fatal("a checkpoint after the cancel was written")
	}
	// Its worker stopped: once its lease lapsed, Lambda's retry closes it
	// cancelled, charged, not given back, and runs nothing.
	e.clock.Set(e.clock.Now().Add(turns.LeaseDuration + time.Second))
	if _, err := e.h.Invoke(context.Background(), fl.payloads[1]); err != nil {
		t.Fatal(err)
	}
	run := decode[runs.Run](t, e.do(t, withParam(event(t, "get-run.json"), "runId", running)).Body)
	if run.Status != runs.StatusCancelled || run.Refunded || run.CancelRequestedAt == nil || e.native.calls != 0 {
		t.Fatalf("the stopped, cancelled run: %s refunded %v, ran %d", run.Status, run.Refunded, e.native.calls)
	}
	if code, body := cancel(running, "user-1"); code != 200 || body["cancel"] != "already_final" || body["status"] != "cancelled" {
		t.Fatalf("cancel a cancelled run: %d %v", code, body)
	}

	// Its answer on its way to the pod: too late.
	late := submit()
	lateRun, err := e.st.ClaimRun(context.Background(), late, e.clock.Now())
	if err != nil {
		t.Fatal(err)
	}
	lateRun.FinalMessage = "the answer"
	if err := e.st.CheckpointRun(context.Background(), lateRun, nil); err != nil {
		t.Fatal(err)
	}
	if code, body := cancel(late, "user-1"); code != 200 || body["cancel"] != "too_late" || body["status"] != "running" {
		t.Fatalf("cancel a run posting its answer: %d %v", code, body)
	}
	// Final: an outcome, not an error.
	lateRun.End(runs.StatusSucceeded, "", "", e.clock.Now())
	if err := e.st.FinishRun(context.Background(), lateRun, false); err != nil {
		t.Fatal(err)
	}
	if code, body := cancel(late, "user-1"); code != 200 || body["cancel"] != "already_final" || body["status"] != "succeeded" {
		t.Fatalf("cancel a finished run: %d %v", code, body)
	}
	if code, _ := cancel("run_missing", "user-1"); code != 404 {
		t.Fatalf("cancel a missing run: %d", code)
	}
}

// A run id that is not an id is a 400; a store that cannot be reached a
// 503 without its words.
func TestCancelRefusals(t *testing.T) {
	e := newEnv(t, envOpts{})
	if resp := e.do(t, withParam(event(t, "cancel-run.json"), "runId", "..")); resp.StatusCode != 400 {
		t.Fatalf("a dotted id: %d %s", resp.StatusCode, resp.Body)
	}
	broken := newEnv(t, envOpts{storeWrap: func(s turns.Store) turns.Store { return brokenStore{s} }})
	if resp := broken.do(t, event(t, "cancel-run.json")); resp.StatusCode != 503 {
		t.Fatalf("an unreachable store: %d %s", resp.StatusCode, resp.Body)
	}
}
