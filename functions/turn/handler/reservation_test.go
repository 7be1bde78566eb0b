package handler_test

import (
	"context"
	"testing"

	"github.com/commonly/runtime/functions/turn/handler"
	"github.com/commonly/runtime/shared/dispatch"
	"github.com/commonly/runtime/shared/runs"
	"github.com/commonly/runtime/shared/turns"
)

// With a spend cap the API shows the reservation: on the run while it is
// in flight (GET /v1/runs/{id}), on the day (GET /v1/me/usage), in the
// 429 that refuses a turn for want of one; the dispatched turn's final
// write releases it.
func TestReservationIsShownAndReleased(t *testing.T) {
	var fl fakeLambda
	e := newEnv(t, envOpts{spendCap: 400_000, dispatcher: func(*turns.Worker) turns.Dispatcher {
		return dispatch.Lambda{Client: &fl, FunctionName: "turn-fn"}
	}})
	e.install(t, "inst-1", "user-1", nil)
	// The default turn bound, $0.25, then what the day has left, $0.15.
	for _, want := range []float64{250_000, 150_000} {
		resp := e.turn(t, "inst-1", "user-1", "hello", "")
		acc := decode[map[string]any](t, resp.Body)
		if resp.StatusCode != 202 {
			t.Fatalf("submit: %d %s", resp.StatusCode, resp.Body)
		}
		id := acc["runId"].(string)
		run := decode[map[string]any](t, e.do(t, withParam(event(t, "get-run.json"), "runId", id)).Body)
		if run["reservedMicros"] != want {
			t.Errorf("run %s reservedMicros %v, want %v", id, run["reservedMicros"], want)
		}
	}
	u := decode[map[string]any](t, e.do(t, event(t, "usage.json")).Body)
	if u["reservedMicros"] != 400_000.0 || u["reservedUSD"] != 0.4 {
		t.Errorf("usage %v", u)
	}
	resp := e.turn(t, "inst-1", "user-1", "one too many", "")
	p := decode[map[string]any](t, resp.Body)
	if resp.StatusCode != 429 || p["reservedMicros"] != 400_000.0 || p["reserved"] != 0.4 || p["spentMicros"] != 0.0 {
		t.Fatalf("refusal: %d %s", resp.StatusCode, resp.Body)
	}
	// The dispatched turns run and release their reservations.
	for _, payload := range fl.payloads {
		out, err := e.h.Invoke(context.Background(), payload)
		if err != nil || out.(*handler.DispatchResult).Status != runs.StatusSucceeded {
			t.Fatalf("dispatch: %+v %v", out, err)
		}
	}
	u = decode[map[string]any](t, e.do(t, event(t, "usage.json")).Body)
	if u["reservedMicros"] != 0.0 || u["reservedUSD"] != 0.0 {
		t.Errorf("usage after the turns: %v", u)
	}
	if r := e.turn(t, "inst-1", "user-1", "room again", ""); r.StatusCode != 202 {
		t.Errorf("after release: %d %s", r.StatusCode, r.Body)
	}
}

// Without a cap neither the run nor the usage shows a reservation.
func TestNoReservationWithoutACap(t *testing.T) {
	var fl fakeLambda
	e := newEnv(t, envOpts{dispatcher: func(*turns.Worker) turns.Dispatcher {
		return dispatch.Lambda{Client: &fl, FunctionName: "turn-fn"}
	}})
	e.install(t, "inst-1", "user-1", nil)
	acc := decode[map[string]any](t, e.turn(t, "inst-1", "user-1", "hello", "").Body)
	run := decode[map[string]any](t, e.do(t, withParam(event(t, "get-run.json"), "runId", acc["runId"].(string))).Body)
	if _, ok := run["reservedMicros"]; ok {
		t.Errorf("run %v", run)
	}
	u := decode[map[string]any](t, e.do(t, event(t, "usage.json")).Body)
	if _, ok := u["reservedMicros"]; ok {
		t.Errorf("usage %v", u)
	}
}
