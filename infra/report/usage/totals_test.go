package usage_test

import (
	"context"
	"encoding/csv"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/commonly/runtime/infra/report/usage"
	"github.com/commonly/runtime/shared/ledger"
	"github.com/commonly/runtime/shared/money"
)

func reportConfig(day, out string) usage.Config {
	cfg, err := usage.LoadConfig(func(k string) string {
		return map[string]string{"STATE_TABLE": tables.State, "FROM": day, "TO": day, "REPORT_OUT": out,
			"DAILY_SPEND_ALARM_USD": "0.0001", "DAILY_SPEND_CAP_USD": "0.001", "PLAN_TURN_LIMITS": "free=4,pro=200"}[k]
	}, ledgerDay(day))
	if err != nil {
		panic(err)
	}
	return cfg
}

// The report's totals are the ledgers' to the micro-dollar, and its
// counts are the runs': turns by engine and plan, errors by kind, the
// cost's parts, tokens and the turns that ran code.
func TestReportTotalsEqualTheLedgers(t *testing.T) {
	d := makeDayOfRuns(t)
	r, err := usage.Build(context.Background(), d.st, reportConfig(d.day, t.TempDir()+"/index.html"))
	if err != nil {
		t.Fatal(err)
	}
	w := expect(d)

	// The ledgers' own totals, read item by item.
	var keys []ledger.DayKey
	for u := range w.userDays {
		keys = append(keys, ledger.DayKey{UserID: u, Day: d.day})
	}
	books, err := d.st.ReadDays(context.Background(), keys)
	if err != nil {
		t.Fatal(err)
	}
	var ledgers money.Micros
	for _, b := range books {
		ledgers += b.Book.CostMicros
	}
	if ledgers == 0 || r.Total.Cost != ledgers || ledgers != w.cost {
		t.Errorf("report %d µ$, ledgers %d µ$, runs %d µ$", r.Total.Cost, ledgers, w.cost)
	}
	if r.Total.UserDays != int64(len(w.userDays)) || r.Total.Turns != w.turns || r.Total.Refunded != w.refunded {
		t.Errorf("user-days %d turns %d refunded %d; want %d %d %d", r.Total.UserDays, r.Total.Turns, r.Total.Refunded, len(w.userDays), w.turns, w.refunded)
	}
	equalMaps(t, "turns by engine", r.Total.TurnsByEngine, w.byEngine)
	equalMaps(t, "turns by plan", r.Total.TurnsByPlan, w.byPlan)
	equalMaps(t, "errors by kind", r.Total.Errors, w.errors)
	if len(w.errors) == 0 || len(w.byEngine) < 2 || w.codeTurns == 0 || w.byPlan["free"] == 0 || w.byPlan["pro"] == 0 || w.atFreeCeiling == 0 {
		t.Errorf("the day lacks variety: errors %v, engines %v, plans %v (each run records its plan), %d turns ran code, %d free user-days at the ceiling", w.errors, w.byEngine, w.byPlan, w.codeTurns, w.atFreeCeiling)
	}
	parts := r.Total.Input + r.Total.Cached + r.Total.Output + r.Total.ModelOther + r.Total.Search + r.Total.Sandbox + r.Total.Lost + r.Total.Open
	if parts != r.Total.Cost || r.Total.Input != w.input || r.Total.Cached != w.cached || r.Total.Output != w.output || r.Total.Open != 0 {
		t.Errorf("parts %d (input %d cached %d output %d other %d search %d sandbox %d open %d) of %d; runs' input %d cached %d output %d",
			parts, r.Total.Input, r.Total.Cached, r.Total.Output, r.Total.ModelOther, r.Total.Search, r.Total.Sandbox, r.Total.Open, r.Total.Cost, w.input, w.cached, w.output)
	}
	var byEngine money.Micros
	for _, c := range r.Total.CostByEngine {
		byEngine += c
	}
	if byEngine != r.Total.Cost {
		t.Errorf("cost by engine sums to %d, total %d", byEngine, r.Total.Cost)
	}
	if r.Total.TokensIn != w.tokensIn || r.Total.TokensOut != w.tokensOut || r.Total.CodeTurns != w.codeTurns || r.Total.CodeRuns != w.codeRuns {
		t.Errorf("tokens %d/%d code %d/%d; want %d/%d %d/%d", r.Total.TokensIn, r.Total.TokensOut, r.Total.CodeTurns, r.Total.CodeRuns, w.tokensIn, w.tokensOut, w.codeTurns, w.codeRuns)
	}
	if r.CostPerTurn.N != w.turns || r.CostPerTurn.Max != int64(w.maxCost) || r.UserDayCost.Max != int64(w.maxUserDay) {
		t.Errorf("cost per turn n %d max %d, user-day max %d; want %d %d %d", r.CostPerTurn.N, r.CostPerTurn.Max, r.UserDayCost.Max, w.turns, w.maxCost, w.maxUserDay)
	}
	if r.Per1000 != money.Micros((int64(w.cost)*1000+w.turns/2)/w.turns) {
		t.Errorf("1,000 turns cost %d", r.Per1000)
	}
	for _, c := range r.Ceilings {
		if c.Plan == "free" && c.AtCeiling != w.atFreeCeiling {
			t.Errorf("free user-days at the ceiling %d, want %d", c.AtCeiling, w.atFreeCeiling)
		}
		// bob, the one pro user-day, stays far under 200.
		if c.Plan == "pro" && (c.AtCeiling != 0 || c.HeadroomP50 != 200-w.charged["bob"]) {
			t.Errorf("pro: %d at the ceiling, headroom %d; want 0 and %d", c.AtCeiling, c.HeadroomP50, 200-w.charged["bob"])
		}
	}
}

// The CSV beside the page holds the same figures: the period's cost,
// exact, and its turns.
func TestReportCSVHoldsTheFigures(t *testing.T) {
	d := makeDayOfRuns(t)
	r, err := usage.Build(context.Background(), d.st, reportConfig(d.day, t.TempDir()+"/index.html"))
	if err != nil {
		t.Fatal(err)
	}
	_, csvPath, err := r.Write()
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(csvPath)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, row := range rows {
		got[strings.Join(row[:3], "/")] = row[3]
	}
	w := expect(d)
	for k, want := range map[string]string{
		"day/total/cost_usd": w.cost.USD(), "day/" + d.day + "/cost_usd": w.cost.USD(),
		"day/total/turns": strconv.FormatInt(w.turns, 10), "day/total/turns_engine_durable-object": strconv.FormatInt(w.byEngine["durable-object"], 10),
		"cost_per_user_day_usd//max": w.maxUserDay.USD(), "headline//cost_usd_per_1000_turns": money.Micros((int64(w.cost)*1000 + w.turns/2) / w.turns).USD(),
	} {
		if got[k] != want {
			t.Errorf("CSV %s = %q, want %q", k, got[k], want)
		}
	}
}

func equalMaps(t *testing.T, what string, got, want map[string]int64) {
	t.Helper()
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s: %s = %d, want %d (got %v)", what, k, got[k], v, got)
		}
	}
	for k, v := range got {
		if _, ok := want[k]; !ok && v != 0 {
			t.Errorf("%s: unexpected %s = %d", what, k, v)
		}
	}
}
