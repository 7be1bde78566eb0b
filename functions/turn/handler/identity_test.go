package handler_test

import (
	"encoding/base64"
	"slices"
	"strings"
	"testing"

	"github.com/commonly/runtime/functions/turn/handler"
)

// TestSubjectBreakingTheIDRuleIsAMalformedIdentity: a token whose sub
// is not a valid id (tablekeys.ValidID) names no user: every route that
// needs an identity answers 401 malformed_identity, before anything is
// read or written with it, so "u1#LEDGER" can never reach a key. The
// public routes still answer, as to anyone.
func TestSubjectBreakingTheIDRuleIsAMalformedIdentity(t *testing.T) {
	e := newEnv(t, envOpts{})
	e.install(t, "inst-1", "u1", nil)
	bad := []string{"u1#LEDGER", "u1#USAGE#2026-12-04", ".", "..", "a\u202eb", "tab\there", strings.Repeat("x", 129), "bad\xffutf8"}
	for _, sub := range bad {
		for _, key := range handler.Routes {
			ev := asUser(t, event(t, routeEvents[key]), sub)
			resp := e.do(t, ev)
			if slices.Contains(handler.PublicRoutes, key) {
				if resp.StatusCode != 200 {
					t.Errorf("%s with sub %q: %d %s", key, sub, resp.StatusCode, resp.Body)
				}
				continue
			}
			p := checkProblem(t, resp, 401, "malformed_identity")
			if strings.Contains(resp.Body, "LEDGER") {
				t.Errorf("%s: the problem echoes the subject: %s", key, resp.Body)
			}
			if p.Title != "Malformed identity" {
				t.Errorf("%s: title %q", key, p.Title)
			}
		}
	}
	// Nothing was admitted under the forged subject, or under u1.
	if r := e.do(t, asUser(t, event(t, "usage.json"), "u1")); r.StatusCode != 200 || !strings.Contains(r.Body, `"turnsUsed":0`) {
		t.Fatalf("usage of u1 after refused tokens: %d %s", r.StatusCode, r.Body)
	}
}

// TestAValidSubjectIsStillAccepted: the rule refuses only what breaks it.
func TestAValidSubjectIsStillAccepted(t *testing.T) {
	e := newEnv(t, envOpts{})
	for _, sub := range []string{"user-1", "ünïcode", "a.b", "with space"} {
		if r := e.do(t, asUser(t, event(t, "usage.json"), sub)); r.StatusCode != 200 {
			t.Errorf("sub %q: %d %s", sub, r.StatusCode, r.Body)
		}
	}
}

// TestSubjectNotUTF8IsRefusedFromTheRawToken: API Gateway passes claims
// decoded already, where "u\xff1" and "u\xfe1" both read "u\uFFFD1". The
// handler reads the verified token's payload from the Authorization
// header as it was sent and refuses such a subject, so two subjects can
// never become one user; the same user's well-formed token is served.
func TestSubjectNotUTF8IsRefusedFromTheRawToken(t *testing.T) {
	e := newEnv(t, envOpts{})
	token := func(payload string) string {
		return "eyJhbGciOiJSUzI1NiIsImtpZCI6ImsxIn0." + base64.RawURLEncoding.EncodeToString([]byte(payload)) + ".c2ln"
	}
	for _, c := range []struct {
		raw, auth string
		status    int
	}{
		{"{\"sub\":\"u\xff1\"}", "Bearer ", 401},
		{"{\"sub\":\"u\xfe1\"}", "", 401}, // the identity source may be the token alone
		{`{"sub":"u\udcff1"}`, "Bearer ", 401},
		{`{"sub":"u\ufffd1"}`, "Bearer ", 200}, // U+FFFD itself, faithfully sent
	} {
		ev := asUser(t, event(t, "usage.json"), "u\uFFFD1")
		ev.Headers["authorization"] = c.auth + token(c.raw)
		resp := e.do(t, ev)
		if c.status == 401 {
			checkProblem(t, resp, 401, "malformed_identity")
			if !strings.Contains(resp.Headers["WWW-Authenticate"], `error="invalid_token"`) {
				t.Errorf("%q: WWW-Authenticate %q", c.raw, resp.Headers["WWW-Authenticate"])
			}
		} else if resp.StatusCode != c.status {
			t.Errorf("%q: %d %s", c.raw, resp.StatusCode, resp.Body)
		}
	}
}
