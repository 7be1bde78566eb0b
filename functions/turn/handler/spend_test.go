package handler_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/commonly/runtime/shared/ledger"
	"github.com/commonly/runtime/shared/money"
)

// count adds cost to a user's day as the alarm function's ledger does
// (the store's ledger write), with the alarm marker when asked, through
// e.alarm: these are the alarm's calls, not the turn's.
func (e *env) count(t *testing.T, user, day string, cost money.Micros, alarm bool) {
	t.Helper()
	ctx := context.Background()
	k := ledger.DayKey{UserID: user, Day: day}
	read, err := e.alarm.ReadDays(ctx, []ledger.DayKey{k})
	if err != nil {
		t.Fatal(err)
	}
	b := read[k].Book
	runs := map[string]ledger.Counted{}
	for id, c := range b.Runs {
		runs[id] = c
	}
	runs["run_counted_"+time.Now().Format("150405.000000000")] = ledger.Counted{CostMicros: cost, Seq: "1"}
	if err := e.alarm.WriteDay(ctx, ledger.Write{Key: k, From: b.Rev, Delta: cost, Next: ledger.Book{Rev: b.Rev + 1, CostMicros: b.CostMicros + cost, Runs: runs}}); err != nil {
		t.Fatal(err)
	}
	if alarm {
		if _, err := e.alarm.MarkAlarm(ctx, k, ledger.AlarmID(k, 2_000_000), read[k].AlarmID, e.clock.Now()); err != nil {
			t.Fatal(err)
		}
	}
}

type spendProblem struct {
	Type        string      `json:"type"`
	Status      int         `json:"status"`
	Limit       json.Number `json:"limit"`
	Spent       json.Number `json:"spent"`
	LimitMicros int64       `json:"limitMicros"`
	SpentMicros int64       `json:"spentMicros"`
	ResetsAt    string      `json:"resetsAt"`
}

// With DAILY_SPEND_CAP_USD set, the admission refuses the next turn once
// the day's counted cost is at the cap, inside its one transaction, and
// the next UTC day admits again.
func TestSpendCapRefusesTheNextTurnUntilMidnight(t *testing.T) {
	e := newEnv(t, envOpts{spendCap: 2_000_000})
	e.install(t, "inst-1", "user-1", nil)
	if r := e.turn(t, "inst-1", "user-1", "first", "k1"); r.StatusCode != 202 {
		t.Fatalf("first turn: %d %s", r.StatusCode, r.Body)
	}
	e.count(t, "user-1", "2026-12-02", 1_999_999, false)
	if r := e.turn(t, "inst-1", "user-1", "under the cap by a micro-dollar", ""); r.StatusCode != 202 {
		t.Fatalf("under the cap: %d %s", r.StatusCode, r.Body)
	}
	e.count(t, "user-1", "2026-12-02", 14_001, true)

	e.clock.Set(time.Date(2026, 12, 2, 23, 59, 0, 0, time.UTC))
	resp := e.turn(t, "inst-1", "user-1", "over", "")
	p := decode[spendProblem](t, resp.Body)
	if resp.StatusCode != 429 || p.Status != 429 || p.Type != "https://commonly.dev/problems/spend_cap_reached" || resp.Headers["Content-Type"] != "application/problem+json" {
		t.Fatalf("over the cap: %d %v %s", resp.StatusCode, resp.Headers, resp.Body)
	}
	if p.Limit != "2.000000" || p.Spent != "2.014000" || p.LimitMicros != 2_000_000 || p.SpentMicros != 2_014_000 || p.ResetsAt != "2026-12-03T00:00:00Z" {
		t.Errorf("problem %+v", p)
	}
	if ra := resp.Headers["Retry-After"]; ra != "61" {
		t.Errorf("Retry-After %q, want 61", ra)
	}
	// Refused before counting: the day still has two turns, and a replay
	// of an earlier request is still answered.
	if r := e.turn(t, "inst-1", "user-1", "first", "k1"); r.StatusCode != 202 || r.Headers["Idempotent-Replayed"] != "true" {
		t.Errorf("replay at the cap: %d %v", r.StatusCode, r.Headers)
	}
	u := decode[map[string]any](t, e.do(t, event(t, "usage.json")).Body)
	if u["turnsUsed"] != 2.0 || u["costMicros"] != 2_014_000.0 || u["spendAlarmRaised"] != true || u["spendCapUSD"] != 2.0 {
		t.Errorf("usage at the cap: %v", u)
	}
	if emf := e.emf.String(); !strings.Contains(emf, `"TurnsRefusedAtSpendCap":1`) {
		t.Errorf("no refusal metric: %s", emf)
	}

	e.clock.Set(time.Date(2026, 12, 3, 0, 0, 1, 0, time.UTC))
	if r := e.turn(t, "inst-1", "user-1", "a new day", ""); r.StatusCode != 202 {
		t.Fatalf("the next UTC day: %d %s", r.StatusCode, r.Body)
	}
	u = decode[map[string]any](t, e.do(t, event(t, "usage.json")).Body)
	if u["day"] != "2026-12-03" || u["turnsUsed"] != 1.0 || u["costMicros"] != 0.0 || u["spendAlarmRaised"] != false {
		t.Errorf("usage on the new day: %v", u)
	}
}

// Without a cap, spend never refuses a turn (the alarm only alarms).
func TestNoSpendCapByDefault(t *testing.T) {
	e := newEnv(t, envOpts{})
	e.install(t, "inst-1", "user-1", nil)
	e.count(t, "user-1", "2026-12-02", 50_000_000, true)
	if r := e.turn(t, "inst-1", "user-1", "expensive day", ""); r.StatusCode != 202 {
		t.Fatalf("%d %s", r.StatusCode, r.Body)
	}
}

// The Commonly backend reads any user's usage on any day still kept.
func TestUserUsageForTheBackend(t *testing.T) {
	e := newEnv(t, envOpts{spendCap: 5_000_000})
	e.install(t, "inst-1", "user-1", nil)
	e.turn(t, "inst-1", "user-1", "hello", "")
	e.count(t, "user-1", "2026-12-02", 2_100_000, true)

	u := decode[map[string]any](t, e.do(t, event(t, "user-usage.json")).Body)
	if u["day"] != "2026-12-02" || u["turnsUsed"] != 1.0 || u["costMicros"] != 2_100_000.0 || u["costUSD"] != 2.1 ||
		u["spendAlarmRaised"] != true || u["spendCapUSD"] != 5.0 || u["resetsAt"] != "2026-12-03T00:00:00Z" {
		t.Errorf("usage: %v", u)
	}
	withDay := func(day string) map[string]string {
		if day == "" {
			return nil
		}
		return map[string]string{"day": day}
	}
	ev := event(t, "user-usage.json")
	// An earlier day, and today when no day is given.
	e.clock.Set(time.Date(2026, 12, 4, 9, 0, 0, 0, time.UTC))
	for day, want := range map[string]map[string]any{
		"2026-12-02": {"day": "2026-12-02", "costMicros": 2_100_000.0},
		"":           {"day": "2026-12-04", "costMicros": 0.0},
	} {
		ev.QueryStringParameters = withDay(day)
		u := decode[map[string]any](t, e.do(t, ev).Body)
		for k, v := range want {
			if u[k] != v {
				t.Errorf("day %q: %s = %v, want %v", day, k, u[k], v)
			}
		}
	}
	for _, bad := range []string{"2026-12-05", "2026-13-01", "02-12-2026", "2026-12-2"} {
		ev.QueryStringParameters = withDay(bad)
		if p := checkProblem(t, e.do(t, ev), 400, "invalid_field"); p.Field != "day" {
			t.Errorf("day %s: field %q", bad, p.Field)
		}
	}
	// A user's own token is not the service's.
	checkProblem(t, e.do(t, asUser(t, event(t, "user-usage.json"), "user-1")), 403, "forbidden")
}
