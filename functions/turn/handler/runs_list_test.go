package handler_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/commonly/runtime/shared/dispatch"
	"github.com/commonly/runtime/shared/runs"
	"github.com/commonly/runtime/shared/turns"
)

type runPage struct {
	Runs       []map[string]any `json:"runs"`
	NextCursor string           `json:"nextCursor"`
}

func withQuery(ev events.APIGatewayV2HTTPRequest, q map[string]string) events.APIGatewayV2HTTPRequest {
	ev.QueryStringParameters = q
	var parts []string
	for k, v := range q {
		parts = append(parts, k+"="+v)
	}
	ev.RawQueryString = strings.Join(parts, "&")
	return ev
}

// GET /v1/me/runs pages the caller's runs newest first, each as GET
// /v1/runs/{runId} gives it; the service's route lists anyone's.
func TestListRunsThroughTheAPI(t *testing.T) {
	e := newEnv(t, envOpts{})
	e.install(t, "inst-1", "user-1", nil)
	e.install(t, "inst-2", "user-2", nil)
	var ids []string
	for _, msg := range []string{"one", "two", "three"} {
		acc := decode[map[string]string](t, e.turn(t, "inst-1", "user-1", msg, "").Body)
		ids = append(ids, acc["runId"])
		e.clock.Set(e.clock.Now().Add(time.Second))
	}
	e.turn(t, "inst-2", "user-2", "theirs", "")

	list := func(ev events.APIGatewayV2HTTPRequest) []map[string]any {
		t.Helper()
		var got []map[string]any
		cursor := ""
		for range 10 {
			q := map[string]string{"limit": "2"}
			if cursor != "" {
				q["cursor"] = cursor
			}
			resp := e.do(t, withQuery(ev, q))
			if resp.StatusCode != 200 {
				t.Fatalf("list: %d %s", resp.StatusCode, resp.Body)
			}
			p := decode[runPage](t, resp.Body)
			got = append(got, p.Runs...)
			if cursor = p.NextCursor; cursor == "" {
				return got
			}
		}
		t.Fatal("the pages never ended")
		return nil
	}
	check := func(who string, got []map[string]any) {
		t.Helper()
		if len(got) != len(ids) {
			t.Fatalf("%s: %d runs listed, want %d", who, len(got), len(ids))
		}
		for i, s := range got {
			id := ids[len(ids)-1-i]
			run := decode[runs.Run](t, e.do(t, withParam(event(t, "get-run.json"), "runId", id)).Body)
			if s["runId"] != id || s["status"] != string(run.Status) || s["costMicros"] != float64(run.CostMicros) ||
				s["installId"] != "inst-1" || s["userId"] != "user-1" || s["engine"] != run.Engine || s["completedAt"] == nil {
				t.Errorf("%s: run %d listed as %v, GET /v1/runs gives %+v", who, i, s, run)
			}
		}
	}
	check("user-1", list(event(t, "my-runs.json")))
	check("the service", list(event(t, "user-runs.json")))
	theirs := decode[runPage](t, e.do(t, asUser(t, event(t, "my-runs.json"), "user-2")).Body)
	if len(theirs.Runs) != 1 || theirs.Runs[0]["userId"] != "user-2" {
		t.Errorf("user-2 lists %v", theirs.Runs)
	}
}

// A run still going is listed as it is now, read from the table: queued
// until its dispatch runs it, then as it ended.
func TestListRunsShowsAnOpenRunAsItIs(t *testing.T) {
	var fl fakeLambda
	e := newEnv(t, envOpts{dispatcher: func(*turns.Worker) turns.Dispatcher {
		return dispatch.Lambda{Client: &fl, FunctionName: "turn-fn"}
	}})
	e.install(t, "inst-1", "user-1", nil)
	id := decode[map[string]string](t, e.turn(t, "inst-1", "user-1", "hello", "").Body)["runId"]
	first := func() map[string]any {
		p := decode[runPage](t, e.do(t, event(t, "my-runs.json")).Body)
		if len(p.Runs) != 1 || p.Runs[0]["runId"] != id {
			t.Fatalf("listed %v", p.Runs)
		}
		return p.Runs[0]
	}
	if r := first(); r["status"] != "queued" || r["startedAt"] != nil || r["completedAt"] != nil {
		t.Errorf("queued run listed as %v", r)
	}
	if _, err := e.h.Invoke(context.Background(), fl.payloads[0]); err != nil {
		t.Fatal(err)
	}
	if r := first(); r["status"] != "succeeded" || r["costMicros"] != 42.0 || r["completedAt"] == nil {
		t.Errorf("finished run listed as %v", r)
	}
}

// A bad limit or cursor is a 400 naming it; a user on the service's
// route is a 403.
func TestListRunsRefusals(t *testing.T) {
	e := newEnv(t, envOpts{})
	for _, c := range []struct {
		q     map[string]string
		field string
	}{
		{map[string]string{"limit": "abc"}, "limit"},
		{map[string]string{"limit": "0"}, "limit"},
		{map[string]string{"limit": "101"}, "limit"},
		{map[string]string{"limit": "-3"}, "limit"},
		{map[string]string{"cursor": "bm90LWEtY3Vyc29y"}, "cursor"},
	} {
		for _, name := range []string{"my-runs.json", "user-runs.json"} {
			p := checkProblem(t, e.do(t, withQuery(event(t, name), c.q)), 400, "invalid_field")
			if p.Field != c.field {
				t.Errorf("%s %v: field %q, want %q", name, c.q, p.Field, c.field)
			}
		}
	}
	checkProblem(t, e.do(t, withParam(event(t, "user-runs.json"), "userId", "a#b")), 400, "invalid_field")
	checkProblem(t, e.do(t, asUser(t, event(t, "user-runs.json"), "user-1")), 403, "forbidden")
}

func (brokenStore) ListRuns(context.Context, string, string, int) (turns.RunPage, error) {
	return turns.RunPage{}, errBroken
}

func (panickingStore) ListRuns(context.Context, string, string, int) (turns.RunPage, error) {
	panic("store bug: secret internal state")
}
