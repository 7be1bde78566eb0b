package load

import (
	"fmt"
	"net/http"
	"sort"
	"strings"

	"github.com/commonly/runtime/shared/ledger"
	"github.com/commonly/runtime/shared/money"
	"github.com/commonly/runtime/shared/runs"
	"github.com/commonly/runtime/shared/turns"
)

// check is one invariant's result: its line of the report.
type check struct {
	name  string
	count int      // what it looked at
	bad   []string // what broke it (the first few are printed)
}

func (c check) ok() bool { return len(c.bad) == 0 }

func (c check) String() string {
	if c.ok() {
		return fmt.Sprintf("ok   %s: %d", c.name, c.count)
	}
	shown := c.bad
	if len(shown) > 5 {
		shown = shown[:5]
	}
	return fmt.Sprintf("FAIL %s: %d of %d (%s)", c.name, len(c.bad), c.count, strings.Join(shown, "; "))
}

// facts is what the invariants need beyond the snapshot.
type facts struct {
	plans     map[string]turns.Plan // by user; missing is free
	limits    turns.Limits
	threshold money.Micros // the spend alarm
	spendCap  money.Micros // 0: none
	// keyRuns are the run ids the API answered for each Idempotency-Key.
	keyRuns map[string]map[string]bool
	// faults are the faults the driver gave each run it learned of.
	faults map[string]Fault
	// lateSandboxes were found alive past their lifetime and one sweep;
	// sandboxesChecked is how many were looked at.
	lateSandboxes    []string
	sandboxesChecked int
	// turnRuns is the run each planned turn made (turnID); killed where
	// each killed run's worker died (kill.go).
	turnRuns map[string]string
	killed   map[string]KillPoint
}

type dayRuns struct {
	admitted, refunded int64
	cost               money.Micros
}

func byDay(rs []runs.Run) map[dayKey]*dayRuns {
	out := map[dayKey]*dayRuns{}
	for _, r := range rs {
		k := dayKey{r.UserID, r.Day}
		d := out[k]
		if d == nil {
			d = &dayRuns{}
			out[k] = d
		}
		d.admitted++
		if r.Refunded {
			d.refunded++
		}
		d.cost += r.CostMicros
	}
	return out
}

func sortedDays[V any](m map[dayKey]V) []dayKey {
	ks := make([]dayKey, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Slice(ks, func(i, j int) bool { return ks[i].user+ks[i].day < ks[j].user+ks[j].day })
	return ks
}

// invariants checks everything, in the report's order.
func invariants(s *snapshot, f facts) []check {
	days := byDay(s.runs)
	return []check{
		everyRunFinal(s), turnsCounted(s, f, days), ledgerExact(s, days), oneAlarmPerCrossing(s, f, days),
		sandboxesReaped(f), refundsByRule(s, f), noSecondRun(s, f), capHolds(s, f, days),
		capSettled(s, days), killedTurnsResume(s, f), noCallTwice(s, f),
	}
}

func everyRunFinal(s *snapshot) check {
	c := check{name: "every run final", count: len(s.runs)}
	for _, r := range s.runs {
		if !r.Status.Final() {
			c.bad = append(c.bad, fmt.Sprintf("%s %s", r.RunID, r.Status))
		}
	}
	return c
}

// turnsCounted: a user-day's counter is its runs admitted less those
// refunded, and never above the plan's ceiling.
func turnsCounted(s *snapshot, f facts, days map[dayKey]*dayRuns) check {
	c := check{name: "user-days whose counted turns equal the runs admitted (less refunds) within the ceiling"}
	seen := map[dayKey]bool{}
	for _, k := range sortedDays(days) {
		d := days[k]
		seen[k] = true
		c.count++
		got := s.usage[k].turns
		limit := f.limits[planOf(f.plans, k.user)]
		if got != d.admitted-d.refunded {
			c.bad = append(c.bad, fmt.Sprintf("%s/%s counted %d, %d admitted, %d refunded", k.user, k.day, got, d.admitted, d.refunded))
		} else if got > limit {
			c.bad = append(c.bad, fmt.Sprintf("%s/%s counted %d past the ceiling %d", k.user, k.day, got, limit))
		}
	}
	for _, k := range sortedDays(s.usage) {
		if !seen[k] && s.usage[k].turns != 0 {
			c.count++
			c.bad = append(c.bad, fmt.Sprintf("%s/%s counted %d turns without a run", k.user, k.day, s.usage[k].turns))
		}
	}
	return c
}

func planOf(plans map[string]turns.Plan, user string) turns.Plan {
	if p, ok := plans[user]; ok {
		return p
	}
	return turns.PlanFree
}

// ledgerExact: a user-day's ledger, and the cost on its usage item that
// the cap reads, equal the sum of its runs' costs to the micro-dollar.
// It looks at every user-day with runs, a ledger or a cost on its usage
// item: a ledger without runs is as wrong as a run without a ledger.
func ledgerExact(s *snapshot, days map[dayKey]*dayRuns) check {
	c := check{name: "user-days whose ledger equals the sum of their runs' costs"}
	all := map[dayKey]bool{}
	for k := range days {
		all[k] = true
	}
	for k := range s.ledger {
		all[k] = true
	}
	for k, u := range s.usage {
		if u.cost != 0 {
			all[k] = true
		}
	}
	for _, k := range sortedDays(all) {
		c.count++
		var want money.Micros
		if d := days[k]; d != nil {
			want = d.cost
		}
		if got := s.ledger[k]; got != want {
			c.bad = append(c.bad, fmt.Sprintf("%s/%s ledger %d µ$, runs %d µ$", k.user, k.day, got, want))
		} else if u := s.usage[k].cost; u != want {
			c.bad = append(c.bad, fmt.Sprintf("%s/%s usage cost %d µ$, runs %d µ$", k.user, k.day, u, want))
		}
	}
	return c
}

// oneAlarmPerCrossing: one SpendAlarmRaised (one alarm id; a retried put
// may repeat it, and consumers drop the repeat) for each user-day whose
// cost reached the threshold, none for the others.
func oneAlarmPerCrossing(s *snapshot, f facts, days map[dayKey]*dayRuns) check {
	c := check{name: "user-days with one SpendAlarmRaised if they crossed the alarm, none if not"}
	ids := map[dayKey]map[string]bool{}
	for _, a := range s.alarms {
		k := dayKey{a.UserID, a.Day}
		if ids[k] == nil {
			ids[k] = map[string]bool{}
		}
		ids[k][a.AlarmID] = true
	}
	crossed := 0
	for _, k := range sortedDays(days) {
		c.count++
		cost := days[k].cost
		n := len(ids[k])
		switch {
		case cost >= f.threshold && n != 1:
			c.bad = append(c.bad, fmt.Sprintf("%s/%s crossed (%d µ$) with %d alarms", k.user, k.day, cost, n))
		case cost < f.threshold && n != 0:
			c.bad = append(c.bad, fmt.Sprintf("%s/%s did not cross (%d µ$) but has %d alarms", k.user, k.day, cost, n))
		}
		if cost >= f.threshold {
			crossed++
		}
		if n == 1 {
			for id := range ids[k] {
				if id != ledger.AlarmID(ledger.DayKey{UserID: k.user, Day: k.day}, f.threshold) {
					c.bad = append(c.bad, fmt.Sprintf("%s/%s alarm id %s", k.user, k.day, id))
				}
			}
		}
	}
	c.name += fmt.Sprintf(" (%d crossed)", crossed)
	return c
}

func sandboxesReaped(f facts) check {
	return check{name: "sandboxes looked at after each sweep, none alive past lifetime + grace + one sweep", count: f.sandboxesChecked, bad: f.lateSandboxes}
}

// refundsByRule: no run that a model call answered is refunded
// (RefundDue's rule, whatever the failure); a succeeded run is not; a
// run whose first model call failed (an infrastructure failure before
// any answer) is.
func refundsByRule(s *snapshot, f facts) check {
	c := check{name: "runs refunded by the rule (RefundDue)", count: len(s.runs)}
	for _, r := range s.runs {
		switch {
		case r.Refunded && r.ModelAnswered():
			c.bad = append(c.bad, fmt.Sprintf("%s refunded after the model answered", r.RunID))
		case r.Refunded && r.Status == runs.StatusSucceeded:
			c.bad = append(c.bad, fmt.Sprintf("%s refunded though it succeeded", r.RunID))
		case f.faults[r.RunID] == ModelFailsFirst && r.Status.Final() && !r.Refunded && !r.ModelAnswered():
			c.bad = append(c.bad, fmt.Sprintf("%s failed before any model answer (%s) and was not refunded", r.RunID, r.ErrorKind))
		}
	}
	return c
}

// noSecondRun: each Idempotency-Key made at most one run, in the table
// and in every answer the API gave for it.
func noSecondRun(s *snapshot, f facts) check {
	c := check{name: "Idempotency-Keys that made at most one run", count: len(f.keyRuns)}
	perKey := map[string][]string{}
	for _, r := range s.runs {
		if r.IdempotencyKey != "" {
			k := r.UserID + "|" + r.IdempotencyKey
			perKey[k] = append(perKey[k], r.RunID)
		}
	}
	for k, ids := range perKey {
		if len(ids) > 1 {
			c.bad = append(c.bad, fmt.Sprintf("key %s made runs %s", k, strings.Join(ids, ",")))
		}
	}
	for k, ids := range f.keyRuns {
		if len(ids) > 1 {
			c.bad = append(c.bad, fmt.Sprintf("key %s answered %d run ids", k, len(ids)))
		}
	}
	return c
}

// capHolds: with a spend cap, no user-day's cost passes it.
func capHolds(s *snapshot, f facts, days map[dayKey]*dayRuns) check {
	c := check{name: "user-days whose cost stays within the spend cap"}
	if f.spendCap == 0 {
		c.name += " (no cap set)"
		return c
	}
	// The runs that cost more than the cap reserved for them say where a
	// passed cap came from.
	over := map[dayKey][]string{}
	for _, r := range s.runs {
		if r.ReservedMicros > 0 && r.CostMicros > r.ReservedMicros {
			k := dayKey{r.UserID, r.Day}
			over[k] = append(over[k], fmt.Sprintf("%s cost %d reserved %d (%s %s)", r.RunID, r.CostMicros, r.ReservedMicros, r.Status, r.ErrorKind))
		}
	}
	for _, k := range sortedDays(days) {
		c.count++
		if cost := days[k].cost; cost > f.spendCap {
			c.bad = append(c.bad, fmt.Sprintf("%s/%s spent %d µ$ past the cap %d µ$ (runs over their reservation: %s)", k.user, k.day, cost, f.spendCap, strings.Join(over[k], ", ")))
		}
	}
	return c
}

// capSettled: once every run is final, nothing is left reserved under
// the spend cap, and each user-day's committed total is what its runs'
// final writes charged (their cost, or the whole reservation for a run
// closed abandoned: turns.endAbandoned), never less than they cost.
func capSettled(s *snapshot, days map[dayKey]*dayRuns) check {
	c := check{name: "user-days with nothing reserved under the spend cap and the cap's committed total equal to what their runs were charged"}
	charged := map[dayKey]money.Micros{}
	var over money.Micros
	for _, r := range s.runs {
		if r.ReservedMicros == 0 {
			continue
		}
		k := dayKey{r.UserID, r.Day}
		charged[k] += r.CapChargedMicros
		if r.Status.Final() && r.CapChargedMicros < r.CostMicros {
			c.bad = append(c.bad, fmt.Sprintf("%s charged %d µ$ under the cap, cost %d µ$", r.RunID, r.CapChargedMicros, r.CostMicros))
		}
		over += max(r.CapChargedMicros-r.CostMicros, 0)
	}
	all := map[dayKey]bool{}
	for k := range days {
		all[k] = true
	}
	for k := range s.usage {
		all[k] = true
	}
	for _, k := range sortedDays(all) {
		c.count++
		u := s.usage[k]
		switch {
		case u.reserved != 0:
			c.bad = append(c.bad, fmt.Sprintf("%s/%s %d µ$ still reserved", k.user, k.day, u.reserved))
		case u.committed != charged[k]:
			c.bad = append(c.bad, fmt.Sprintf("%s/%s committed %d µ$, its runs charged %d µ$", k.user, k.day, u.committed, charged[k]))
		case u.held != u.committed:
			c.bad = append(c.bad, fmt.Sprintf("%s/%s held %d µ$, committed %d µ$", k.user, k.day, u.held, u.committed))
		}
	}
	c.name += fmt.Sprintf(" (abandoned runs charged %d µ$ over their cost)", over)
	return c
}

// boundKinds are the turn's own bounds: a killed turn that ends on one
// ran out of what it may spend, whichever attempt spent it.
var boundKinds = map[runs.ErrorKind]bool{runs.ErrTurnCap: true, runs.ErrTokenCap: true, runs.ErrTimeout: true, runs.ErrBudget: true}

// killedTurnsResume: a turn whose worker was killed resumes and
// succeeds, unless its attempts or its bounds ran out; each such
// exception is counted with its reason.
func killedTurnsResume(s *snapshot, f facts) check {
	c := check{name: "killed turns that resumed and succeeded", count: len(f.killed)}
	byID := make(map[string]*runs.Run, len(s.runs))
	for i := range s.runs {
		byID[s.runs[i].RunID] = &s.runs[i]
	}
	exceptions := map[string]int{}
	ids := make([]string, 0, len(f.killed))
	for id := range f.killed {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		r := byID[id]
		switch {
		case r == nil:
			c.bad = append(c.bad, fmt.Sprintf("%s (killed at %s) has no run", id, f.killed[id]))
		case r.Status == runs.StatusSucceeded:
		case r.Status == runs.StatusInterrupted && r.Attempts >= r.MaxAttempts:
			exceptions["attempts ran out"]++
		case boundKinds[r.ErrorKind]:
			exceptions["bound "+string(r.ErrorKind)]++
		default:
			c.bad = append(c.bad, fmt.Sprintf("%s (killed at %s) ended %s %s after %d attempts of %d", id, f.killed[id], r.Status, r.ErrorKind, r.Attempts, r.MaxAttempts))
		}
	}
	if len(exceptions) > 0 {
		c.name += ", or ran out of (" + mapLine(exceptions) + ")"
	}
	return c
}

// noCallTwice: no model call whose answer was recorded is made again.
// Each step of a run (the model answers its request carries) is answered
// once; a second answer is a repeat inside the flush window only where
// the run records a lost attempt that had a model call in flight (its
// answer not yet durable when the worker died), one for each. Requests
// the model failed or never finished answering are not answers.
func noCallTwice(s *snapshot, f facts) check {
	answers := map[string]map[int]int{} // run id → step → answers
	for _, m := range s.models {
		if m.status != http.StatusOK {
			continue
		}
		id := f.turnRuns[m.turn]
		if id == "" {
			id = "turn " + m.turn
		}
		if answers[id] == nil {
			answers[id] = map[int]int{}
		}
		answers[id][m.step]++
	}
	lost := map[string]int{}
	for _, r := range s.runs {
		for _, l := range r.LostAttempts {
			if l.InFlight == runs.InFlightModel {
				lost[r.RunID]++
			}
		}
	}
	c := check{count: len(answers)}
	repeats := 0
	ids := make([]string, 0, len(answers))
	for id := range answers {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		extra := 0
		for _, n := range answers[id] {
			extra += n - 1
		}
		if extra > lost[id] {
			c.bad = append(c.bad, fmt.Sprintf("%s: %d model calls answered again, %d lost attempts with a call in flight", id, extra, lost[id]))
			continue
		}
		repeats += extra
	}
	c.name = fmt.Sprintf("runs whose recorded model calls were made once (%d repeats of a call in flight when a worker died counted apart)", repeats)
	return c
}
