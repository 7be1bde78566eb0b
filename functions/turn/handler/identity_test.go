package handler_test

import (
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
