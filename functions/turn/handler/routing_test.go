package handler_test

import (
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/commonly/runtime/shared/engine/durableobject/dotest"
	"github.com/commonly/runtime/shared/runs"
)

func TestRoutingPerInstall(t *testing.T) {
	do := dotest.New("do-secret-token")
	srv := httptest.NewServer(do)
	defer srv.Close()
	e := newEnv(t, envOpts{doURL: srv.URL})
	e.install(t, "inst-native", "user-1", nil)
	e.install(t, "inst-do", "user-1", map[string]any{"engine": "durable-object", "instanceId": "inst do/1"})

	r := e.turn(t, "inst-native", "user-1", "to native", "")
	if decode[map[string]string](t, r.Body)["engine"] != "native" || e.native.calls != 1 || len(do.Turns()) != 0 {
		t.Fatalf("native install routed wrong: %s, native %d, do %d", r.Body, e.native.calls, len(do.Turns()))
	}

	r = e.turn(t, "inst-do", "user-1", "to the durable object", "")
	acc := decode[map[string]string](t, r.Body)
	got := do.Turns()
	if acc["engine"] != "durable-object" || len(got) != 1 || e.native.calls != 1 {
		t.Fatalf("do install routed wrong: %s", r.Body)
	}
	if got[0].AgentName != "helper" || got[0].InstanceID != "inst do/1" || got[0].Authorization != "Bearer do-secret-token" {
		t.Errorf("DO request %+v", got[0])
	}
	want := map[string]string{"runId": acc["runId"], "userId": "user-1", "podId": "pod-1", "message": "to the durable object", "trigger": "user"}
	for k, v := range want {
		if got[0].Fields[k] != v {
			t.Errorf("DO body %s = %q, want %q", k, got[0].Fields[k], v)
		}
	}
	run := decode[runs.Run](t, e.do(t, withParam(event(t, "get-run.json"), "runId", acc["runId"])).Body)
	// 176 miss at 0.44 + 1024 hit at 0.014 + 80 out at 1.32 (peak, 12:00 UTC is off-peak: 0.22/0.007/0.66)
	if run.Status != runs.StatusSucceeded || run.FinalMessage != "answer from the durable object" || run.Tokens.Prompt != 1200 ||
		run.Tokens.CachedPrompt != 1024 || run.CostMicros <= 0 || run.Cost.PriceVersion == "" || len(run.Steps) != 1 || run.Engine != "durable-object" {
		t.Fatalf("fallback run = %+v", run)
	}

	// Migration: while in progress the old engine serves; done switches; rolled back returns.
	migrate := func(state string) {
		t.Helper()
		ev := withBody(withParam(event(t, "migration.json"), "installId", "inst-do"), map[string]string{"to": "native", "state": state})
		if r := e.do(t, ev); r.StatusCode != 200 {
			t.Fatalf("migration %s: %d %s", state, r.StatusCode, r.Body)
		}
	}
	engineOfNextTurn := func() string {
		t.Helper()
		return decode[map[string]string](t, e.turn(t, "inst-do", "user-1", "which engine?", "").Body)["engine"]
	}
	migrate("in-progress")
	if got := engineOfNextTurn(); got != "durable-object" {
		t.Errorf("in progress: %s", got)
	}
	migrate("done")
	if got := engineOfNextTurn(); got != "native" {
		t.Errorf("done: %s", got)
	}
	migrate("rolled-back")
	if got := engineOfNextTurn(); got != "durable-object" {
		t.Errorf("rolled back: %s", got)
	}
}

func TestFallbackFailures(t *testing.T) {
	cases := []struct {
		name   string
		do     dotest.Reply
		closed bool
		kind   runs.ErrorKind
		msg    string
		turns  float64 // a refusal is refunded; a timeout's outcome is unknown
	}{
		{"500", dotest.Reply{Status: 500}, false, runs.ErrFallback, "status 500", 0},
		{"timeout", dotest.Reply{Hang: true}, false, runs.ErrTimeout, "did not answer within", 1},
		{"unreachable", dotest.Default(dotest.Turn{}), true, runs.ErrFallback, "could not be reached", 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			do := dotest.New("do-secret-token")
			do.Answer(c.do)
			srv := httptest.NewServer(do)
			defer srv.Close()
			if c.closed {
				srv.Close()
			}
			e := newEnv(t, envOpts{doURL: srv.URL, doTimeout: 200 * time.Millisecond})
			e.install(t, "inst-do", "user-1", map[string]any{"engine": "durable-object"})
			r := e.turn(t, "inst-do", "user-1", "hi", "")
			id := decode[map[string]string](t, r.Body)["runId"]
			run := decode[runs.Run](t, e.do(t, withParam(event(t, "get-run.json"), "runId", id)).Body)
			if run.Status != runs.StatusFailed || run.ErrorKind != c.kind || !strings.Contains(run.ErrorMessage, c.msg) {
				t.Fatalf("run = %s %s %q", run.Status, run.ErrorKind, run.ErrorMessage)
			}
			if strings.Contains(run.ErrorMessage, "secret stack trace") {
				t.Error("the runtime's body leaked into the run")
			}
			if e.native.calls != 0 {
				t.Error("a failed fallback turn must never run on another engine")
			}
			if u := decode[map[string]any](t, e.do(t, event(t, "usage.json")).Body); u["turnsUsed"] != c.turns {
				t.Errorf("turns used %v, want %v", u, c.turns)
			}
		})
	}
}

func TestFallbackUnconfigured(t *testing.T) {
	e := newEnv(t, envOpts{})
	e.install(t, "inst-do", "user-1", map[string]any{"engine": "durable-object"})
	checkProblem(t, e.turn(t, "inst-do", "user-1", "hi", ""), 503, "fallback_unconfigured")
	if u := decode[map[string]any](t, e.do(t, event(t, "usage.json")).Body); u["turnsUsed"] != 0.0 {
		t.Errorf("a refused turn must not count: %v", u)
	}
	if e.native.calls != 0 {
		t.Error("no silent fallback to the native engine")
	}
}
