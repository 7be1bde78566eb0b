package handler_test

import (
	"testing"
	"time"

	"github.com/commonly/runtime/shared/turns"
)

// TestRetryAfter: a 429 says, by the service's clock, how long until the
// ceiling resets; every 503 asks for a retry in 5 s; other problems carry
// no Retry-After.
func TestRetryAfter(t *testing.T) {
	e := newEnv(t, envOpts{limits: "free=1,pro=5"})
	e.install(t, "inst-1", "user-1", nil)
	e.clock.Set(time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC))
	if r := e.turn(t, "inst-1", "user-1", "first", ""); r.StatusCode != 202 {
		t.Fatalf("first turn: %d %s", r.StatusCode, r.Body)
	}
	r := e.turn(t, "inst-1", "user-1", "second", "")
	checkProblem(t, r, 429, "turn_ceiling_reached")
	if got := r.Headers["Retry-After"]; got != "43201" { // 12 h to midnight UTC, rounded up
		t.Errorf("429 Retry-After = %q, want 43201", got)
	}
	if r := e.turn(t, "inst-1", "user-1", "", ""); r.StatusCode != 400 || r.Headers["Retry-After"] != "" {
		t.Errorf("400: status %d, Retry-After %q", r.StatusCode, r.Headers["Retry-After"])
	}

	down := newEnv(t, envOpts{storeWrap: func(s turns.Store) turns.Store { return brokenStore{s} }})
	r = down.do(t, event(t, "usage.json"))
	checkProblem(t, r, 503, "unavailable")
	if got := r.Headers["Retry-After"]; got != "5" {
		t.Errorf("503 Retry-After = %q, want 5", got)
	}
}
