package handler_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/commonly/runtime/functions/turn/handler"
	"github.com/commonly/runtime/shared/dispatch"
	"github.com/commonly/runtime/shared/runs"
	"github.com/commonly/runtime/shared/turns"
)

type problemBody struct {
	Type     string `json:"type"`
	Title    string `json:"title"`
	Status   int    `json:"status"`
	Detail   string `json:"detail"`
	Field    string `json:"field"`
	Limit    *int64 `json:"limit"`
	Used     *int64 `json:"used"`
	ResetsAt string `json:"resetsAt"`
}

func TestProblemJSONForEachError(t *testing.T) {
	e := newEnv(t, envOpts{})
	e.install(t, "inst-1", "user-1", nil)
	e.install(t, "inst-2", "user-2", nil)
	big := strings.Repeat("x", handler.MaxBodyBytes+1)
	cases := []struct {
		name   string
		ev     events.APIGatewayV2HTTPRequest
		status int
		slug   string
		field  string
	}{
		{"no identity", event(t, "no-auth.json"), 401, "unauthenticated", ""},
		{"user cannot create installs", asUser(t, event(t, "put-install.json"), "user-1"), 403, "forbidden", ""},
		{"user cannot set plans", asUser(t, event(t, "set-plan.json"), "user-1"), 403, "forbidden", ""},
		{"user cannot migrate", asUser(t, event(t, "migration.json"), "user-1"), 403, "forbidden", ""},
		{"not the install's owner", withParam(event(t, "submit-turn.json"), "installId", "inst-2"), 404, "not_found", ""},
		{"unknown install", withParam(event(t, "submit-turn.json"), "installId", "nope"), 404, "not_found", ""},
		{"unknown run", event(t, "get-run.json"), 404, "not_found", ""},
		{"malformed JSON", withBody(event(t, "submit-turn.json"), `{"message":`), 400, "malformed_body", "body"},
		{"not an object", withBody(event(t, "submit-turn.json"), `["hi"]`), 400, "malformed_body", "body"},
		{"empty body", withBody(event(t, "submit-turn.json"), ``), 400, "malformed_body", "body"},
		{"unknown field", withBody(event(t, "submit-turn.json"), `{"message":"hi","userId":"user-2"}`), 400, "malformed_body", "userId"},
		{"wrong type", withBody(event(t, "submit-turn.json"), `{"message":42}`), 400, "malformed_body", "message"},
		{"missing message", withBody(event(t, "submit-turn.json"), `{"trigger":"x"}`), 400, "invalid_field", "message"},
		{"message too long", withBody(event(t, "submit-turn.json"), map[string]string{"message": strings.Repeat("é", turns.MaxMessageChars+1)}), 400, "invalid_field", "message"},
		{"oversized body", withBody(event(t, "submit-turn.json"), `{"message":"`+big+`"}`), 400, "body_too_large", "body"},
		{"bad engine", withBody(event(t, "put-install.json"), `{"userId":"user-1","podId":"p","agentName":"a","engine":"lambda"}`), 400, "invalid_field", "engine"},
		{"missing podId", withBody(event(t, "put-install.json"), `{"userId":"user-1","agentName":"a"}`), 400, "invalid_field", "podId"},
		{"bad plan", withBody(event(t, "set-plan.json"), `{"plan":"gold"}`), 400, "invalid_field", "plan"},
		{"bad migration state", withBody(event(t, "migration.json"), `{"to":"native","state":"paused"}`), 400, "invalid_field", "state"},
		{"migration of unknown install", withParam(event(t, "migration.json"), "installId", "nope"), 404, "not_found", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			resp := e.do(t, c.ev)
			checkProblem(t, resp, c.status, c.slug)
			if p := decode[problemBody](t, resp.Body); p.Field != c.field {
				t.Errorf("field = %q, want %q (detail %q)", p.Field, c.field, p.Detail)
			}
		})
	}
}

func checkProblem(t *testing.T, resp events.APIGatewayV2HTTPResponse, status int, slug string) problemBody {
	t.Helper()
	if resp.StatusCode != status {
		t.Fatalf("status = %d, want %d: %s", resp.StatusCode, status, resp.Body)
	}
	if ct := resp.Headers["Content-Type"]; ct != "application/problem+json" {
		t.Errorf("content type = %q", ct)
	}
	p := decode[problemBody](t, resp.Body)
	if p.Type != handler.ProblemTypeBase+slug || p.Status != status || p.Title == "" {
		t.Errorf("problem = %+v, want type %s", p, slug)
	}
	return p
}

func TestStoreDownFailsClosedWithoutLeakingInternals(t *testing.T) {
	e := newEnv(t, envOpts{storeWrap: func(s turns.Store) turns.Store { return brokenStore{s} }})
	for _, ev := range []events.APIGatewayV2HTTPRequest{event(t, "submit-turn.json"), event(t, "usage.json"), event(t, "my-runs.json")} {
		resp := e.do(t, ev)
		checkProblem(t, resp, 503, "unavailable")
		if strings.Contains(resp.Body, "10.0.0.1") || strings.Contains(resp.Body, "internal detail") {
			t.Errorf("internal error text reached the client: %s", resp.Body)
		}
	}
	if !strings.Contains(e.logs.String(), "internal detail") {
		t.Error("the internal error should be logged for operators")
	}
}

func TestTurnLifecycleInline(t *testing.T) {
	e := newEnv(t, envOpts{})
	e.install(t, "inst-1", "user-1", nil)

	resp := e.turn(t, "inst-1", "user-1", "hello", "")
	if resp.StatusCode != 202 || resp.Headers["Location"] == "" {
		t.Fatalf("submit: %d %v %s", resp.StatusCode, resp.Headers, resp.Body)
	}
	acc := decode[map[string]string](t, resp.Body)
	if acc["engine"] != "native" || !strings.HasPrefix(acc["runId"], "run_") || resp.Headers["Location"] != "/v1/runs/"+acc["runId"] {
		t.Fatalf("accepted = %v %v", acc, resp.Headers)
	}
	get := e.do(t, withParam(event(t, "get-run.json"), "runId", acc["runId"]))
	run := decode[runs.Run](t, get.Body)
	if get.StatusCode != 200 || run.Status != runs.StatusSucceeded || run.FinalMessage != "native answer to: hello" || run.UserID != "user-1" || run.StartedAt == nil || run.CompletedAt == nil {
		t.Fatalf("run = %d %+v", get.StatusCode, run)
	}
	// The backend may read any run; another user may not (and cannot tell it exists).
	if r := e.do(t, withSub(withParam(event(t, "get-run.json"), "runId", acc["runId"]), "user-2")); r.StatusCode != 404 {
		t.Errorf("other user reading the run: %d", r.StatusCode)
	}
	admin := withParam(event(t, "get-run.json"), "runId", acc["runId"])
	admin.RequestContext.Authorizer = event(t, "put-install.json").RequestContext.Authorizer
	if r := e.do(t, admin); r.StatusCode != 200 {
		t.Errorf("service reading the run: %d", r.StatusCode)
	}

	// Prefer: wait answers 200 with the finished run.
	ev := withHeader(withSub(withBody(withParam(event(t, "submit-turn.json"), "installId", "inst-1"), map[string]string{"message": "again"}), "user-1"), "prefer", "wait=5")
	ev = withHeader(ev, "idempotency-key", "")
	w := e.do(t, ev)
	if w.StatusCode != 200 || w.Headers["Preference-Applied"] != "wait=5" || decode[runs.Run](t, w.Body).Status != runs.StatusSucceeded {
		t.Fatalf("wait: %d %v %s", w.StatusCode, w.Headers, w.Body)
	}

	emf := e.emf.String()
	for _, want := range []string{`"TurnsAdmitted":1`, `"Turns":1`, `"Status":"succeeded"`, `"TurnCostMicros":42`, `"Namespace":"Commonly/HostedRuntime"`} {
		if !strings.Contains(emf, want) {
			t.Errorf("EMF output lacks %s: %s", want, emf)
		}
	}
	if strings.Contains(emf, "user-1") || strings.Contains(emf, acc["runId"]) {
		t.Error("ids must not become metric dimensions")
	}

	// The day's cost is the alarm function's to count, from the runs
	// stream (functions/alarm); the turn counts turns only.
	u := e.do(t, event(t, "usage.json"))
	usage := decode[map[string]any](t, u.Body)
	if u.StatusCode != 200 || usage["plan"] != "free" || usage["turnsUsed"] != 2.0 || usage["turnsLimit"] != 30.0 || usage["costMicros"] != 0.0 ||
		usage["resetsAt"] != "2026-12-03T00:00:00Z" || usage["day"] != "2026-12-02" || usage["spendAlarmRaised"] != false || usage["spendCapUSD"] != nil {
		t.Fatalf("usage = %d %v", u.StatusCode, usage)
	}
}

func TestIdempotencyKey(t *testing.T) {
	e := newEnv(t, envOpts{})
	e.install(t, "inst-1", "user-1", nil)
	first := e.turn(t, "inst-1", "user-1", "hello", "key-1")
	again := e.turn(t, "inst-1", "user-1", "hello", "key-1")
	a, b := decode[map[string]string](t, first.Body), decode[map[string]string](t, again.Body)
	if first.StatusCode != 202 || again.StatusCode != 202 || a["runId"] != b["runId"] || again.Headers["Idempotent-Replayed"] != "true" {
		t.Fatalf("replay: %d %v / %d %v", first.StatusCode, a, again.StatusCode, b)
	}
	if e.native.calls != 1 {
		t.Errorf("turn ran %d times, want once", e.native.calls)
	}
	checkProblem(t, e.turn(t, "inst-1", "user-1", "something else", "key-1"), 409, "idempotency_conflict")
	if u := decode[map[string]any](t, e.do(t, event(t, "usage.json")).Body); u["turnsUsed"] != 1.0 {
		t.Errorf("a replay must not count: %v", u)
	}
	// The same key used by someone else is theirs alone.
	e.install(t, "inst-2", "user-2", nil)
	if r := e.turn(t, "inst-2", "user-2", "hello", "key-1"); r.StatusCode != 202 || decode[map[string]string](t, r.Body)["runId"] == a["runId"] {
		t.Errorf("other user's key: %d %s", r.StatusCode, r.Body)
	}
}

func TestCeilingAdmitsExactlyLimitUnderConcurrency(t *testing.T) {
	e := newEnv(t, envOpts{})
	e.install(t, "inst-1", "user-1", nil)
	e.install(t, "inst-1b", "user-1", nil) // the ceiling is per user, across installs
	var ok, refused, other atomic.Int64
	var wg sync.WaitGroup
	for i := range 100 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			inst := "inst-1"
			if i%2 == 1 {
				inst = "inst-1b"
			}
			resp := e.turn(t, inst, "user-1", fmt.Sprintf("turn %d", i), "")
			switch resp.StatusCode {
			case 202:
				ok.Add(1)
			case 429:
				refused.Add(1)
			default:
				other.Add(1)
				t.Errorf("unexpected %d %s", resp.StatusCode, resp.Body)
			}
		}()
	}
	wg.Wait()
	if ok.Load() != 30 || refused.Load() != 70 || other.Load() != 0 {
		t.Fatalf("admitted %d, refused %d, other %d; want 30/70/0", ok.Load(), refused.Load(), other.Load())
	}
	p := checkProblem(t, e.turn(t, "inst-1", "user-1", "one more", ""), 429, "turn_ceiling_reached")
	if p.Limit == nil || *p.Limit != 30 || p.Used == nil || *p.Used != 30 || p.ResetsAt != "2026-12-03T00:00:00Z" {
		t.Errorf("429 details = %+v", p)
	}
}

func TestCeilingAcrossUTCMidnightAndPlans(t *testing.T) {
	e := newEnv(t, envOpts{limits: "free=2,pro=3"})
	e.install(t, "inst-1", "user-1", nil)
	e.clock.Set(time.Date(2026, 12, 2, 23, 59, 58, 0, time.UTC))
	for i := range 2 {
		if r := e.turn(t, "inst-1", "user-1", fmt.Sprint(i), ""); r.StatusCode != 202 {
			t.Fatalf("turn %d: %d", i, r.StatusCode)
		}
	}
	e.clock.Set(time.Date(2026, 12, 2, 23, 59, 59, 999_000_000, time.UTC))
	checkProblem(t, e.turn(t, "inst-1", "user-1", "late", ""), 429, "turn_ceiling_reached")
	e.clock.Set(time.Date(2026, 12, 3, 0, 0, 0, 0, time.UTC))
	if r := e.turn(t, "inst-1", "user-1", "new day", ""); r.StatusCode != 202 {
		t.Fatalf("first turn after midnight: %d %s", r.StatusCode, r.Body)
	}
	// Upgrading lifts the ceiling the same day.
	if r := e.do(t, event(t, "set-plan.json")); r.StatusCode != 200 {
		t.Fatalf("set plan: %d %s", r.StatusCode, r.Body)
	}
	for i := range 2 {
		if r := e.turn(t, "inst-1", "user-1", fmt.Sprint("pro", i), ""); r.StatusCode != 202 {
			t.Fatalf("pro turn %d: %d", i, r.StatusCode)
		}
	}
	p := checkProblem(t, e.turn(t, "inst-1", "user-1", "pro 3", ""), 429, "turn_ceiling_reached")
	if *p.Limit != 3 || *p.Used != 3 {
		t.Errorf("pro ceiling: %+v", p)
	}
	u := decode[map[string]any](t, e.do(t, event(t, "usage.json")).Body)
	if u["plan"] != "pro" || u["turnsLimit"] != 3.0 || u["resetsAt"] != "2026-12-04T00:00:00Z" {
		t.Errorf("usage = %v", u)
	}
}

func TestInfrastructureFailureRefundsTheTurn(t *testing.T) {
	e := newEnv(t, envOpts{limits: "free=1,pro=5"})
	e.install(t, "inst-1", "user-1", nil)
	e.native.fail, e.native.refund = true, true
	for i := range 3 {
		r := e.turn(t, "inst-1", "user-1", fmt.Sprint(i), "")
		if r.StatusCode != 202 {
			t.Fatalf("turn %d: %d %s", i, r.StatusCode, r.Body)
		}
	}
	u := decode[map[string]any](t, e.do(t, event(t, "usage.json")).Body)
	if u["turnsUsed"] != 0.0 {
		t.Errorf("refunded turns still counted: %v", u)
	}
}

// fakeLambda records asynchronous self-invokes.
type fakeLambda struct {
	mu       sync.Mutex
	payloads [][]byte
	fail     bool
}

func TestLambdaDispatchIsClaimedOnce(t *testing.T) {
	var fl fakeLambda
	e := newEnv(t, envOpts{dispatcher: func(*turns.Worker) turns.Dispatcher {
		return dispatch.Lambda{Client: &fl, FunctionName: "turn-fn"}
	}})
	e.install(t, "inst-1", "user-1", nil)
	resp := e.turn(t, "inst-1", "user-1", "hello", "")
	acc := decode[map[string]string](t, resp.Body)
	if resp.StatusCode != 202 || acc["status"] != "queued" || len(fl.payloads) != 1 {
		t.Fatalf("submit: %d %v, %d invokes", resp.StatusCode, acc, len(fl.payloads))
	}
	// The dispatched invocation runs the turn; Lambda's retry of it does not.
	for range 2 {
		out, err := e.h.Invoke(context.Background(), fl.payloads[0])
		if err != nil {
			t.Fatal(err)
		}
		if out.(*handler.DispatchResult).Status != runs.StatusSucceeded {
			t.Fatalf("dispatch result %+v", out)
		}
	}
	if e.native.calls != 1 {
		t.Errorf("turn ran %d times", e.native.calls)
	}
	// The SAM-style dispatch event for an unknown run fails the invocation.
	if _, err := e.h.Invoke(context.Background(), mustRead(t, "dispatch.json")); err == nil {
		t.Error("dispatch of an unknown run should fail the invocation")
	}

	fl.fail = true
	checkProblem(t, e.turn(t, "inst-1", "user-1", "when lambda is down", ""), 503, "unavailable")
	u := decode[map[string]any](t, e.do(t, event(t, "usage.json")).Body)
	if u["turnsUsed"] != 1.0 {
		t.Errorf("an undispatched turn must be refunded: %v", u)
	}
}

func TestMethodAndRouteErrors(t *testing.T) {
	e := newEnv(t, envOpts{})
	ev := event(t, "usage.json")
	ev.RouteKey, ev.RawPath, ev.RequestContext.HTTP.Method = "$default", "/v1/nothing", "GET"
	checkProblem(t, e.do(t, ev), 404, "route_not_found")
	ev.RawPath, ev.RequestContext.HTTP.Method = "/v1/me/usage", "DELETE"
	checkProblem(t, e.do(t, ev), 405, "method_not_allowed")
	if _, err := e.h.Invoke(context.Background(), json.RawMessage(`{"Records":[]}`)); err == nil {
		t.Error("an unknown event shape must fail the invocation")
	}
}

func TestCatchAllRouteMatchesLikeAPIGateway(t *testing.T) {
	e := newEnv(t, envOpts{})
	e.install(t, "inst-1", "user-1", nil)
	ev := event(t, "submit-turn.json")
	ev.RouteKey, ev.PathParameters = "$default", nil
	if r := e.do(t, ev); r.StatusCode != 202 {
		t.Fatalf("$default route: %d %s", r.StatusCode, r.Body)
	}
}

// A store that answers reads but fails the admission write still refuses
// the turn with a 503: the count could not be checked.
func TestAdmissionWriteFailureFailsClosed(t *testing.T) {
	e := newEnv(t, envOpts{storeWrap: func(s turns.Store) turns.Store { return admitFails{s} }})
	e.install(t, "inst-1", "user-1", nil)
	resp := e.turn(t, "inst-1", "user-1", "hi", "")
	checkProblem(t, resp, 503, "unavailable")
	if e.native.calls != 0 {
		t.Error("a turn that was not counted must not run")
	}
}

type admitFails struct{ turns.Store }

func (admitFails) Admit(context.Context, turns.Admission) (turns.AdmitResult, error) {
	return turns.AdmitResult{}, errBroken
}
