package load

import (
	"strings"
	"testing"

	"github.com/commonly/runtime/shared/ledger"
	"github.com/commonly/runtime/shared/money"
	"github.com/commonly/runtime/shared/runs"
	"github.com/commonly/runtime/shared/turns"
)

// goodDay is a consistent snapshot: two users, one over the alarm.
func goodDay() (*snapshot, facts) {
	day := "2026-12-04"
	answered := []runs.Step{{}}
	// r1 was killed once, inside the flush window of its second call, and
	// resumed; r4 was killed twice and ran out of attempts.
	lostCall := []runs.LostAttempt{{Attempt: 1, InFlight: runs.InFlightModel}}
	s := &snapshot{
		runs: []runs.Run{
			{RunID: "r1", UserID: "a", Day: day, Status: runs.StatusSucceeded, CostMicros: 60_000, Steps: answered, IdempotencyKey: "k1",
				ReservedMicros: 70_000, CapChargedMicros: 60_000, Attempts: 2, MaxAttempts: 3, LostAttempts: lostCall},
			{RunID: "r2", UserID: "a", Day: day, Status: runs.StatusSucceeded, CostMicros: 60_000, Steps: answered, IdempotencyKey: "k2",
				ReservedMicros: 70_000, CapChargedMicros: 60_000},
			{RunID: "r3", UserID: "b", Day: day, Status: runs.StatusFailed, Refunded: true, IdempotencyKey: "k3"},
			{RunID: "r4", UserID: "b", Day: day, Status: runs.StatusInterrupted, ErrorKind: runs.ErrInterrupted, CostMicros: 5, Steps: answered, IdempotencyKey: "k4",
				ReservedMicros: 50_000, CapChargedMicros: 50_000, Attempts: 3, MaxAttempts: 3},
		},
		usage: map[dayKey]usageItem{
			{"a", day}: {turns: 2, cost: 120_000, committed: 120_000, held: 120_000},
			{"b", day}: {turns: 1, cost: 5, committed: 50_000, held: 50_000},
		},
		ledger: map[dayKey]money.Micros{{"a", day}: 120_000, {"b", day}: 5},
		models: []modelCall{
			{turn: "a/0", step: 0, status: 200}, {turn: "a/0", step: 1, status: 200}, {turn: "a/0", step: 1, status: 200},
			{turn: "a/1", step: 0, status: 500}, {turn: "a/1", step: 0, status: 200},
			{turn: "b/0", step: 0, status: 500},
		},
	}
	alarm := ledger.AlarmID(ledger.DayKey{UserID: "a", Day: day}, 100_000)
	s.alarms = []ledger.Alarm{{UserID: "a", Day: day, AlarmID: alarm}, {UserID: "a", Day: day, AlarmID: alarm}}
	f := facts{
		plans: map[string]turns.Plan{"a": turns.PlanPro}, limits: turns.Limits{turns.PlanFree: 1, turns.PlanPro: 5},
		threshold: 100_000, spendCap: 200_000,
		keyRuns: map[string]map[string]bool{"k1": {"r1": true}, "k3": {"r3": true}},
		faults:  map[string]Fault{"r3": ModelFailsFirst}, sandboxesChecked: 3,
		turnRuns: map[string]string{"a/0": "r1", "a/1": "r2", "b/0": "r3"},
		killed:   map[string]KillPoint{"r1": KillModelCall, "r4": KillAnytime},
	}
	return s, f
}

func TestInvariantsHoldOnAConsistentDay(t *testing.T) {
	s, f := goodDay()
	for _, c := range invariants(s, f) {
		if !c.ok() || !strings.HasPrefix(c.String(), "ok ") {
			t.Errorf("%s", c)
		}
	}
}

// The exceptions and the repeats the checks allow are counted on their
// lines: r4 ran out of attempts, r1's call in flight was made again,
// r4's reservation was charged whole.
func TestInvariantLinesCountWhatTheyAllow(t *testing.T) {
	s, f := goodDay()
	all := ""
	for _, c := range invariants(s, f) {
		all += c.String() + "\n"
	}
	for _, want := range []string{
		"killed turns that resumed and succeeded, or ran out of (attempts ran out 1): 2",
		"(1 repeats of a call in flight when a worker died counted apart): 2",
		"(abandoned runs charged 49995 µ$ over their cost): 2",
	} {
		if !strings.Contains(all, want) {
			t.Errorf("no line with %q in\n%s", want, all)
		}
	}
}

// Each invariant fails, alone, on the break it is there to catch.
func TestEachInvariantCatchesItsBreak(t *testing.T) {
	tests := []struct {
		name  string
		check string
		brk   func(*snapshot, *facts)
	}{
		{"a run left open", "every run final", func(s *snapshot, _ *facts) { s.runs[0].Status = runs.StatusRunning }},
		{"a turn counted twice", "counted turns", func(s *snapshot, _ *facts) { s.usage[dayKey{"a", "2026-12-04"}] = usageItem{turns: 3, cost: 120_000} }},
		{"past the ceiling", "counted turns", func(_ *snapshot, f *facts) { f.limits[turns.PlanPro] = 1 }},
		{"a refund not given back", "counted turns", func(s *snapshot, _ *facts) { s.usage[dayKey{"b", "2026-12-04"}] = usageItem{turns: 2, cost: 5} }},
		{"a micro-dollar lost", "ledger", func(s *snapshot, _ *facts) { s.ledger[dayKey{"b", "2026-12-04"}] = 4 }},
		{"a run counted twice in the ledger", "ledger", func(s *snapshot, _ *facts) { s.ledger[dayKey{"a", "2026-12-04"}] = 180_000 }},
		{"the cap's cost off", "ledger", func(s *snapshot, _ *facts) { s.usage[dayKey{"a", "2026-12-04"}] = usageItem{turns: 2, cost: 60_000} }},
		{"a crossing without an alarm", "SpendAlarmRaised", func(s *snapshot, _ *facts) { s.alarms = nil }},
		{"an alarm without a crossing", "SpendAlarmRaised", func(_ *snapshot, f *facts) { f.threshold = 200_000 }},
		{"two alarms for a day", "SpendAlarmRaised", func(s *snapshot, _ *facts) {
			s.alarms = append(s.alarms, ledger.Alarm{UserID: "a", Day: "2026-12-04", AlarmID: "other"})
		}},
		{"a sandbox alive too long", "sandboxes", func(_ *snapshot, f *facts) { f.lateSandboxes = []string{"e2b sbx1"} }},
		{"a refund after the model answered", "refunded", func(s *snapshot, _ *facts) { s.runs[3].Refunded = true }},
		{"a first-call failure not refunded", "refunded", func(s *snapshot, _ *facts) { s.runs[2].Refunded = false }},
		{"a retry's second run", "Idempotency-Keys", func(s *snapshot, _ *facts) { s.runs[1].IdempotencyKey = "k1" }},
		{"a key answered with two runs", "Idempotency-Keys", func(_ *snapshot, f *facts) { f.keyRuns["k1"]["r9"] = true }},
		{"past the cap", "spend cap", func(_ *snapshot, f *facts) { f.spendCap = 100_000 }},
		{"a ledger without runs", "ledger", func(s *snapshot, _ *facts) { s.ledger[dayKey{"c", "2026-12-04"}] = 7 }},
		{"a reservation never released", "nothing reserved", func(s *snapshot, _ *facts) {
			u := s.usage[dayKey{"a", "2026-12-04"}]
			u.reserved = 70_000
			s.usage[dayKey{"a", "2026-12-04"}] = u
		}},
		{"a charge committed twice", "committed total", func(s *snapshot, _ *facts) {
			u := s.usage[dayKey{"a", "2026-12-04"}]
			u.committed, u.held = 180_000, 180_000
			s.usage[dayKey{"a", "2026-12-04"}] = u
		}},
		{"a run charged less than it cost", "committed total", func(s *snapshot, _ *facts) { s.runs[0].CostMicros = 65_000 }},
		{"a killed turn left interrupted with attempts left", "killed turns", func(s *snapshot, _ *facts) {
			s.runs[0].Status, s.runs[0].ErrorKind = runs.StatusInterrupted, runs.ErrInterrupted
		}},
		{"a killed turn failed", "killed turns", func(s *snapshot, _ *facts) { s.runs[3].Status, s.runs[3].ErrorKind = runs.StatusFailed, runs.ErrLLM }},
		{"a killed turn's run missing", "killed turns", func(_ *snapshot, f *facts) { f.killed["r9"] = KillMidStream }},
		{"a recorded call made again", "made once", func(s *snapshot, _ *facts) {
			s.models = append(s.models, modelCall{turn: "a/1", step: 0, status: 200})
		}},
		{"a repeat without a lost attempt", "made once", func(s *snapshot, _ *facts) { s.runs[0].LostAttempts = nil }},
		{"a call repeated twice for one lost attempt", "made once", func(s *snapshot, _ *facts) {
			s.models = append(s.models, modelCall{turn: "a/0", step: 1, status: 200})
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, f := goodDay()
			tt.brk(s, &f)
			var failed []string
			for _, c := range invariants(s, f) {
				if !c.ok() {
					failed = append(failed, c.String())
				}
			}
			if len(failed) == 0 || !strings.Contains(strings.Join(failed, "\n"), tt.check) {
				t.Fatalf("want a FAIL of %q, got %q", tt.check, failed)
			}
			for _, line := range failed {
				if !strings.HasPrefix(line, "FAIL ") {
					t.Errorf("line %q does not begin with FAIL", line)
				}
			}
		})
	}
}
