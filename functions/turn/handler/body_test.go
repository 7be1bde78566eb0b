package handler_test

import (
	"encoding/base64"
	"strings"
	"testing"
)

// bodyRoutes are the routes that read a body, with a valid one each.
var bodyRoutes = []struct {
	key, event, body string
}{
	{"PUT /v1/installs/{installId}", "put-install.json", `{"userId":"user-1","podId":"pod-1","agentName":"helper"}`},
	{"POST /v1/installs/{installId}/migration", "migration.json", `{"to":"durable-object","state":"in-progress"}`},
	{"PUT /v1/users/{userId}/plan", "set-plan.json", `{"plan":"pro"}`},
	{"POST /v1/installs/{installId}/turns", "submit-turn.json", `{"message":"hi"}`},
}

// TestBodiesAreUTF8: invalid UTF-8 in a body, and escapes of unpaired
// surrogates (which a JSON decoder also turns into U+FFFD), are refused
// with invalid_field naming the field, on every route, rather than
// silently replaced. A pair of escapes making one character is fine.
func TestBodiesAreUTF8(t *testing.T) {
	e := newEnv(t, envOpts{})
	e.install(t, "inst-1", "user-1", nil)
	cases := []struct {
		name, event, body, field string
	}{
		{"message", "submit-turn.json", "{\"message\":\"caf\xe9\"}", "message"},
		{"trigger", "submit-turn.json", "{\"message\":\"hi\",\"trigger\":\"\xff\"}", "trigger"},
		{"truncated sequence", "submit-turn.json", "{\"message\":\"\xe2\x82\"}", "message"},
		{"a surrogate's bytes", "submit-turn.json", "{\"message\":\"\xed\xa0\x80\"}", "message"},
		{"a lone high surrogate escape", "submit-turn.json", `{"message":"a\ud83d"}`, "message"},
		{"a lone low surrogate escape", "submit-turn.json", `{"message":"\ude42b"}`, "message"},
		{"reversed surrogate escapes", "submit-turn.json", `{"message":"\ude42\ud83d"}`, "message"},
		{"a field name", "submit-turn.json", "{\"mess\xe9ge\":\"hi\"}", "body"},
		{"an install's field", "put-install.json", "{\"userId\":\"user-1\",\"podId\":\"pod-1\",\"agentName\":\"helper\",\"systemPrompt\":\"\xc0\xaf\"}", "systemPrompt"},
		{"a tool name", "put-install.json", "{\"userId\":\"user-1\",\"podId\":\"pod-1\",\"agentName\":\"helper\",\"tools\":[\"commonly_run_code\",\"x\xff\"]}", "tools"},
		{"a plan", "set-plan.json", "{\"plan\":\"pro\xff\"}", "plan"},
		{"a migration state", "migration.json", "{\"to\":\"native\",\"state\":\"done\xff\"}", "state"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := checkProblem(t, e.do(t, withBody(event(t, c.event), c.body)), 400, "invalid_field")
			if p.Field != c.field || !strings.Contains(p.Detail, "UTF-8") {
				t.Errorf("field %q detail %q, want field %q and a word on UTF-8", p.Field, p.Detail, c.field)
			}
		})
	}
	t.Run("base64-encoded", func(t *testing.T) {
		ev := event(t, "submit-turn.json")
		ev.Body, ev.IsBase64Encoded = base64.StdEncoding.EncodeToString([]byte("{\"message\":\"caf\xe9\"}")), true
		if p := checkProblem(t, e.do(t, ev), 400, "invalid_field"); p.Field != "message" {
			t.Errorf("field %q", p.Field)
		}
	})
	if e.native.calls != 0 {
		t.Fatalf("a turn ran on an invalid body: %d engine calls", e.native.calls)
	}
	t.Run("a surrogate pair and U+FFFD itself are text", func(t *testing.T) {
		resp := e.do(t, withHeader(withBody(event(t, "submit-turn.json"), `{"message":"smile \ud83d\ude42 \ufffd"}`), "idempotency-key", ""))
		if resp.StatusCode != 202 || e.native.calls != 1 {
			t.Fatalf("%d %s", resp.StatusCode, resp.Body)
		}
	})
}

// TestFieldNamesMatchExactly: a JSON decoder that matches names without
// case would take {"MESSAGE":"x"} for a message; the API refuses any name
// that is not exactly a field's (malformed_body, as any unknown field), a
// name given twice (invalid_field: which one would count?), and data after
// the object, on every route.
func TestFieldNamesMatchExactly(t *testing.T) {
	e := newEnv(t, envOpts{})
	e.install(t, "inst-1", "user-1", nil)
	cases := []struct {
		name, event, body, slug, field string
	}{
		{"upper case", "submit-turn.json", `{"MESSAGE":"x"}`, "malformed_body", "MESSAGE"},
		{"title case", "submit-turn.json", `{"Message":"x"}`, "malformed_body", "Message"},
		{"beside the right one", "submit-turn.json", `{"message":"x","Trigger":"y"}`, "malformed_body", "Trigger"},
		{"an install's field", "put-install.json", `{"userId":"user-1","podId":"pod-1","AgentName":"helper"}`, "malformed_body", "AgentName"},
		{"a plan", "set-plan.json", `{"Plan":"pro"}`, "malformed_body", "Plan"},
		{"a migration", "migration.json", `{"TO":"native","state":"done"}`, "malformed_body", "TO"},
		{"a name twice", "submit-turn.json", `{"message":"x","message":"y"}`, "invalid_field", "message"},
		{"a name twice, once in another case", "submit-turn.json", `{"message":"x","mEssage":"y"}`, "malformed_body", "mEssage"},
		{"a closing brace too many", "submit-turn.json", `{"message":"x"}}`, "malformed_body", "body"},
		{"a second object", "submit-turn.json", `{"message":"x"} {"message":"y"}`, "malformed_body", "body"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := checkProblem(t, e.do(t, withBody(event(t, c.event), c.body)), 400, c.slug)
			if p.Field != c.field {
				t.Errorf("field %q (detail %q), want %q", p.Field, p.Detail, c.field)
			}
		})
	}
	if e.native.calls != 0 {
		t.Fatalf("a turn ran: %d engine calls", e.native.calls)
	}
}

// TestBodiesAreJSON: a body-carrying route answers 415 to a request whose
// Content-Type is missing or is not application/json (in any case, with
// no parameter but charset=utf-8), before reading the body; the body
// routes all take the documented type.
func TestBodiesAreJSON(t *testing.T) {
	e := newEnv(t, envOpts{})
	e.install(t, "inst-1", "user-1", nil)
	refused := []string{"", "text/plain", "text/plain;charset=UTF-8", "application/x-www-form-urlencoded",
		"multipart/form-data; boundary=x", "application/jsonx", "application/json; charset=iso-8859-1", "application/xml", "json"}
	for _, r := range bodyRoutes {
		for _, ct := range refused {
			ev := withHeader(withBody(event(t, r.event), r.body), "content-type", ct)
			p := checkProblem(t, e.do(t, ev), 415, "unsupported_media_type")
			if !strings.Contains(p.Detail, "application/json") {
				t.Errorf("%s with %q: detail %q does not say what to send", r.key, ct, p.Detail)
			}
		}
	}
	accepted := []string{"application/json", "Application/JSON", "application/json; charset=utf-8", "application/json;charset=\"UTF-8\""}
	for i, ct := range accepted {
		ev := withHeader(withBody(event(t, "submit-turn.json"), `{"message":"hi"}`), "idempotency-key", "")
		delete(ev.Headers, "content-type")
		ev.Headers["Content-Type"] = ct // another caller's spelling of the name
		if resp := e.do(t, ev); resp.StatusCode != 202 {
			t.Errorf("%q: %d %s", ct, resp.StatusCode, resp.Body)
		}
		if e.native.calls != i+1 {
			t.Fatalf("%q: %d engine calls", ct, e.native.calls)
		}
	}
}
