package handler_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/commonly/runtime/shared/runs"
	"github.com/commonly/runtime/shared/turns"
)

// badIDs are ids no route takes: dot segments, bytes that are not UTF-8
// (DynamoDB would refuse them as a key, a 503), and characters that make
// an id read as another (bidirectional override, zero width, C1 control).
var badIDs = []string{".", "..", "\xff", "inst\xe2\x80", "abc\u202efdp", "inst\u200b1", "inst\u0085"}

// TestPathIDsAreRefused: every id taken from a path is checked by the
// same rule (tablekeys.ValidID) and refused with 400 invalid_field naming the
// parameter, before any store call.
func TestPathIDsAreRefused(t *testing.T) {
	e := newEnv(t, envOpts{})
	e.install(t, "inst-1", "user-1", nil)
	routes := []struct {
		event, param, body string
	}{
		{"put-install.json", "installId", `{"userId":"user-1","podId":"pod-1","agentName":"helper"}`},
		{"migration.json", "installId", `{"to":"durable-object","state":"in-progress"}`},
		{"set-plan.json", "userId", `{"plan":"pro"}`},
		{"submit-turn.json", "installId", `{"message":"hi"}`},
		{"get-run.json", "runId", ""},
		{"get-install.json", "installId", ""},
	}
	for _, r := range routes {
		for _, id := range badIDs {
			ev := withParam(event(t, r.event), r.param, id)
			if r.body != "" {
				ev = withBody(ev, r.body)
			}
			p := checkProblem(t, e.do(t, ev), 400, "invalid_field")
			if p.Field != r.param {
				t.Errorf("%s with %s %q: field %q", r.event, r.param, id, p.Field)
			}
		}
	}
	if e.native.calls != 0 {
		t.Errorf("%d turns ran", e.native.calls)
	}
}

// TestBodyIDsAreRefused: the ids an install's body names are checked by
// the same rule; none of them is stored.
func TestBodyIDsAreRefused(t *testing.T) {
	e := newEnv(t, envOpts{})
	for _, field := range []string{"userId", "podId", "agentName", "instanceId"} {
		for _, id := range badIDs {
			// Written by hand: json.Marshal would turn bytes that are not
			// UTF-8 into U+FFFD.
			fields := map[string]string{"userId": "user-1", "podId": "pod-1", "agentName": "helper", field: id}
			var parts []string
			for k, v := range fields {
				parts = append(parts, `"`+k+`":"`+v+`"`)
			}
			body := "{" + strings.Join(parts, ",") + "}"
			p := checkProblem(t, e.do(t, withBody(withParam(event(t, "put-install.json"), "installId", "inst-9"), body)), 400, "invalid_field")
			if p.Field != field {
				t.Errorf("%s %q: field %q", field, id, p.Field)
			}
		}
	}
	if in, err := e.st.GetInstall(context.Background(), "inst-9"); err == nil {
		t.Errorf("an install was stored: %+v", in)
	}
}

// TestSomeoneElsesInstallIsNotFound: a user's turn on another user's
// install gets exactly the answer a turn on a missing install gets, so
// install ids cannot be probed; with the install cache warm too, and
// with a body that names another field in error (checked first, for
// both alike).
func TestSomeoneElsesInstallIsNotFound(t *testing.T) {
	for _, ttl := range []time.Duration{0, time.Minute} {
		e := newEnv(t, envOpts{installCacheTTL: ttl})
		e.install(t, "inst-2", "user-2", nil)
		e.install(t, "inst-3", "user-2", map[string]any{"engine": "durable-object"}) // no fallback configured here
		owners := e.turn(t, "inst-2", "user-2", "warm the cache", "k0")
		if owners.StatusCode != 202 {
			t.Fatalf("owner's turn: %d %s", owners.StatusCode, owners.Body)
		}
		missing := e.turn(t, "nope", "user-1", "hello", "k1")
		checkProblem(t, missing, 404, "not_found")
		for _, id := range []string{"inst-2", "inst-3"} {
			theirs := e.turn(t, id, "user-1", "hello", "k1")
			if theirs.StatusCode != missing.StatusCode || theirs.Body != missing.Body || len(theirs.Headers) != len(missing.Headers) {
				t.Errorf("cache %s, %s: someone else's install answers %d %v %s, a missing one %d %v %s", ttl, id,
					theirs.StatusCode, theirs.Headers, theirs.Body, missing.StatusCode, missing.Headers, missing.Body)
			}
		}
		// Runs too: someone else's reads as a missing one.
		theirRun := e.do(t, withParam(event(t, "get-run.json"), "runId", decode[map[string]string](t, owners.Body)["runId"]))
		noRun := e.do(t, withParam(event(t, "get-run.json"), "runId", "run_000000000000000000000000"))
		checkProblem(t, noRun, 404, "not_found")
		if theirRun.StatusCode != noRun.StatusCode || theirRun.Body != noRun.Body || len(theirRun.Headers) != len(noRun.Headers) {
			t.Errorf("someone else's run answers %d %s, a missing one %d %s", theirRun.StatusCode, theirRun.Body, noRun.StatusCode, noRun.Body)
		}
		if e.native.calls != 1 {
			t.Errorf("%d turns ran, want the owner's only", e.native.calls)
		}
		if !strings.Contains(e.logs.String(), "not the install's owner") {
			t.Error("a turn on someone else's install is not logged for operators")
		}
	}
}

// runsDown fails every read of a run, as an unreachable table would.
type runsDown struct{ turns.Store }

func (runsDown) GetRun(context.Context, string) (*runs.Run, error) { return nil, errBroken }

// TestGetRunFailsClosed: with the runs table unreachable, GET
// /v1/runs/{id} is a 503 with Retry-After, not a 500, and shows nothing
// internal.
func TestGetRunFailsClosed(t *testing.T) {
	e := newEnv(t, envOpts{storeWrap: func(s turns.Store) turns.Store { return runsDown{s} }})
	asService := event(t, "get-run.json")
	asService.RequestContext.Authorizer = event(t, "put-install.json").RequestContext.Authorizer
	for _, ev := range []events.APIGatewayV2HTTPRequest{event(t, "get-run.json"), asService} {
		resp := e.do(t, ev)
		checkProblem(t, resp, 503, "unavailable")
		if resp.Headers["Retry-After"] != "5" || strings.Contains(resp.Body, "10.0.0.1") {
			t.Errorf("%v %s", resp.Headers, resp.Body)
		}
	}
}

// TestIdempotencyKeyIsPrintableASCII: the key is kept on the run, so a
// header value that is not UTF-8 would be a key DynamoDB refuses (a 503);
// anything but printable ASCII is refused with 400 before admission.
func TestIdempotencyKeyIsPrintableASCII(t *testing.T) {
	e := newEnv(t, envOpts{})
	e.install(t, "inst-1", "user-1", nil)
	for _, key := range []string{"k\xff", "k\x00", "clé", "k\u202e"} {
		p := checkProblem(t, e.turn(t, "inst-1", "user-1", "hello", key), 400, "invalid_field")
		if p.Field != "Idempotency-Key" {
			t.Errorf("%q: field %q", key, p.Field)
		}
	}
	if r := e.turn(t, "inst-1", "user-1", "hello", "7d0c1f6e-0b1a-4c55 ~!"); r.StatusCode != 202 || e.native.calls != 1 {
		t.Errorf("a printable key: %d %s, %d turns", r.StatusCode, r.Body, e.native.calls)
	}
}
