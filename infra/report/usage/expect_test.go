package usage_test

import (
	"cmp"
	"strconv"
	"time"

	"github.com/commonly/runtime/shared/ledger"
	"github.com/commonly/runtime/shared/money"
	"github.com/commonly/runtime/shared/runs"
	"github.com/commonly/runtime/shared/utcday"
)

// want is what the runs themselves say, counted by the test.
type want struct {
	userDays                    map[string]money.Micros
	turns, refunded             int64
	byEngine, byPlan, errors    map[string]int64
	cost, input, cached, output money.Micros
	tokensIn, tokensOut         int64
	codeTurns, codeRuns         int64
	maxCost, maxUserDay         money.Micros
	atFreeCeiling               int64
	charged                     map[string]int64
	plan                        map[string]string
	// buckets are the histograms the records give: chart id → each
	// bucket's upper bound (as drawn) → count.
	buckets map[string]map[string]int64
}

func (w want) bucket(chart string, v int64) {
	if w.buckets[chart] == nil {
		w.buckets[chart] = map[string]int64{}
	}
	w.buckets[chart][strconv.FormatInt(ledger.BucketUpper(ledger.Bucket(v)), 10)]++
}

// userDaysByPlan counts the user-days of each plan.
func (w want) userDaysByPlan() map[string]int64 {
	out := map[string]int64{}
	for u := range w.userDays {
		out[w.plan[u]]++
	}
	return out
}

func expect(d *dayOfRuns) want {
	w := want{userDays: map[string]money.Micros{}, byEngine: map[string]int64{}, byPlan: map[string]int64{}, errors: map[string]int64{}, charged: map[string]int64{}}
	plan := map[string]string{}
	w.plan = plan
	w.buckets = map[string]map[string]int64{}
	w.plan = plan
	for _, r := range d.runs {
		w.userDays[r.UserID] += r.CostMicros
		w.turns++
		if r.Refunded {
			w.refunded++
		} else {
			w.charged[r.UserID]++
		}
		w.byEngine[r.Engine]++
		w.byPlan[cmp.Or(r.Plan, "unknown")]++
		plan[r.UserID] = r.Plan
		if r.Status != runs.StatusSucceeded {
			w.errors[string(cmp.Or(r.ErrorKind, runs.ErrUnknown))]++
		}
		w.cost += r.CostMicros
		w.input += r.Cost.InputMicros
		w.cached += r.Cost.CachedInputMicros
		w.output += r.Cost.OutputMicros
		w.tokensIn += r.Tokens.Prompt
		w.tokensOut += r.Tokens.Completion
		var code int64
		for _, s := range r.Steps {
			for _, c := range s.ToolCalls {
				if c.CodeRun != nil {
					code++
				}
			}
		}
		if code > 0 {
			w.codeTurns++
			w.codeRuns += code
		}
		w.maxCost = max(w.maxCost, r.CostMicros)
		w.bucket("cost-per-turn", int64(r.CostMicros))
		w.bucket("tokens-per-turn", r.Tokens.Prompt+r.Tokens.Completion)
		w.bucket("duration", r.CompletedAt.Sub(r.CreatedAt).Milliseconds())
	}
	for u, c := range w.userDays {
		w.bucket("userday-cost", int64(c))
		id := "turns-per-userday-" + plan[u]
		if w.buckets[id] == nil {
			w.buckets[id] = map[string]int64{}
		}
		w.buckets[id][strconv.FormatInt(w.charged[u], 10)]++
		w.maxUserDay = max(w.maxUserDay, c)
		if plan[u] == "free" && w.charged[u] >= 4 {
			w.atFreeCeiling++
		}
	}
	return w
}

func ledgerDay(day string) time.Time {
	t, _ := time.Parse(utcday.Layout, day)
	return t
}
