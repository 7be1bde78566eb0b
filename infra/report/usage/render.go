package usage

import (
	"bytes"
	_ "embed"
	"encoding/csv"
	"fmt"
	"html/template"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/commonly/runtime/shared/money"
)

//go:embed page.html.tmpl
var pageTemplate string

var page = template.Must(template.New("page").Funcs(template.FuncMap{
	"usd": usd, "pct": func(f float64) string { return fmt.Sprintf("%.1f%%", 100*f) },
	"ms": ms, "num": func(v int64) string { return strconv.FormatInt(v, 10) },
	"micros": func(v int64) string { return usd(money.Micros(v)) },
}).Parse(pageTemplate))

// usd shows an amount to a hundredth of a cent, or exactly (to the
// micro-dollar) below a cent, where turns' costs mostly are.
func usd(m money.Micros) string {
	if m < 10_000 && m > -10_000 {
		return m.String()
	}
	return fmt.Sprintf("$%.4f", float64(m)/1e6)
}

func ms(v int64) string {
	if v >= 10_000 {
		return fmt.Sprintf("%.1f s", float64(v)/1000)
	}
	return fmt.Sprintf("%d ms", v)
}

// view is what the template reads.
type view struct {
	*Report
	Charts []chart
}

// Charts are the page's figures, in its order.
func (r *Report) Charts() []chart {
	days := make([]string, len(r.Days))
	for i, d := range r.Days {
		days[i] = d.Day
	}
	perDay := func(f func(Day) int64) []int64 {
		out := make([]int64, len(r.Days))
		for i, d := range r.Days {
			out[i] = f(d)
		}
		return out
	}
	count := func(v int64) string { return strconv.FormatInt(v, 10) }
	money := func(v int64) string { return usd(moneyOf(v)) }
	var out []chart
	add := func(id, title, note string, svg template.HTML, legend []legendItem) {
		out = append(out, chart{ID: id, Title: title, Note: note, SVG: svg, Legend: legend})
	}
	var ss []series
	for _, e := range r.Engines {
		ss = append(ss, series{e, perDay(func(d Day) int64 { return d.TurnsByEngine[e] })})
	}
	svg, lg := stackedBars("turns-by-engine", days, ss, count)
	add("turns-by-engine", "Turns a day, by engine", "Finished turns (refunded ones included).", svg, lg)

	ss = nil
	for _, p := range r.Plans {
		ss = append(ss, series{p, perDay(func(d Day) int64 { return d.TurnsByPlan[p] })})
	}
	svg, lg = stackedBars("turns-by-plan", days, ss, count)
	add("turns-by-plan", "Turns a day, by plan", "The plan each turn was admitted under.", svg, lg)

	ss = []series{
		{"model input", perDay(func(d Day) int64 { return int64(d.Input) })},
		{"model cached input", perDay(func(d Day) int64 { return int64(d.Cached) })},
		{"model output", perDay(func(d Day) int64 { return int64(d.Output) })},
		{"model (not split)", perDay(func(d Day) int64 { return int64(d.ModelOther) })},
		{"search", perDay(func(d Day) int64 { return int64(d.Search) })},
		{"sandbox", perDay(func(d Day) int64 { return int64(d.Sandbox) })},
		{"lost attempts (estimated)", perDay(func(d Day) int64 { return int64(d.Lost) })},
		{"runs not finished", perDay(func(d Day) int64 { return int64(d.Open) })},
	}
	svg, lg = stackedBars("cost-by-part", days, ss, money)
	add("cost-by-part", "Cost a day, by what was paid for", "Sums to the cost ledgers' totals.", svg, lg)

	ss = nil
	for _, e := range r.Engines {
		ss = append(ss, series{e, perDay(func(d Day) int64 { return int64(d.CostByEngine[e]) })})
	}
	ss = append(ss, series{"runs not finished", perDay(func(d Day) int64 { return int64(d.Open) })})
	svg, lg = stackedBars("cost-by-engine", days, ss, money)
	add("cost-by-engine", "Cost a day, by engine", "", svg, lg)

	ss = nil
	for _, k := range r.Kinds {
		ss = append(ss, series{k, perDay(func(d Day) int64 { return d.Errors[k] })})
	}
	svg, lg = stackedBars("errors-by-kind", days, ss, count)
	add("errors-by-kind", "Turns that did not succeed, by errorKind", "", svg, lg)

	dist := func(d Dist, both bool) []marker {
		ms := []marker{{"p50", d.P50, "#333"}}
		if both {
			ms = append(ms, marker{"p90", d.P90, "#b07aa1"})
		}
		return append(ms, marker{"p99", d.P99, "#e15759"})
	}
	if r.CostPerTurn.N > 0 {
		add("cost-per-turn", "Cost per turn", "Turns by cost; logarithmic buckets.", histogram("cost-per-turn", r.CostHist, false, money, dist(r.CostPerTurn, true)), nil)
		add("tokens-per-turn", "Tokens per turn", "Prompt plus completion tokens; logarithmic buckets.", histogram("tokens-per-turn", r.TokensHist, false, count, dist(r.TokensPerTurn, true)), nil)
		add("duration", "Turn duration", "Admission to the final status; logarithmic buckets.", histogram("duration", r.DurationHist, false, ms, dist(r.Duration, false)), nil)
	}
	lines := []marker{{"alarm", int64(r.Config.Threshold), "#e15759"}}
	if r.Config.Cap > 0 {
		lines = append(lines, marker{"cap", int64(r.Config.Cap), "#333"})
	}
	add("userday-cost", "Cost per user-day", "User-days by their total cost; the alarm threshold and the cap drawn.", histogram("userday-cost", r.UserDayCostHist, false, money, lines), nil)
	for _, c := range r.Ceilings {
		counts := map[int]int64{}
		for i, n := range c.Counts {
			counts[i] = n
		}
		var ms []marker
		if c.Limit >= 0 {
			ms = []marker{{"ceiling", c.Limit, "#e15759"}}
		}
		id := "turns-per-userday-" + c.Plan
		add(id, "Turns per user-day, "+c.Plan, "Charged turns (refunds excluded) a user-day, against the plan's ceiling.", histogram(id, counts, true, count, ms), nil)
	}
	return out
}

func moneyOf(v int64) money.Micros { return money.Micros(v) }

// Write renders the page to cfg.Out and the CSV beside it (same name,
// .csv), creating the directory.
func (r *Report) Write() (htmlPath, csvPath string, err error) {
	htmlPath = r.Config.Out
	csvPath = strings.TrimSuffix(htmlPath, filepath.Ext(htmlPath)) + ".csv"
	if err := os.MkdirAll(filepath.Dir(htmlPath), 0o755); err != nil {
		return "", "", err
	}
	var page bytes.Buffer
	if err := r.HTML(&page); err != nil {
		return "", "", err
	}
	if err := os.WriteFile(htmlPath, page.Bytes(), 0o644); err != nil {
		return "", "", err
	}
	var c bytes.Buffer
	if err := r.CSV(&c); err != nil {
		return "", "", err
	}
	return htmlPath, csvPath, os.WriteFile(csvPath, c.Bytes(), 0o644)
}

// HTML renders the page.
func (r *Report) HTML(w *bytes.Buffer) error {
	return page.Execute(w, view{Report: r, Charts: r.Charts()})
}

// CSV writes the same figures as rows of section, day, name, value;
// money in dollars with six decimals, exact.
func (r *Report) CSV(w *bytes.Buffer) error {
	cw := csv.NewWriter(w)
	row := func(section, day, name, value string) { _ = cw.Write([]string{section, day, name, value}) }
	n := func(v int64) string { return strconv.FormatInt(v, 10) }
	row("section", "day", "name", "value")
	for _, d := range append(append([]Day{}, r.Days...), r.Total) {
		row("day", d.Day, "user_days", n(d.UserDays))
		row("day", d.Day, "turns", n(d.Turns))
		row("day", d.Day, "turns_refunded", n(d.Refunded))
		row("day", d.Day, "turns_resumed", n(d.Resumed))
		for _, e := range r.Engines {
			row("day", d.Day, "turns_engine_"+e, n(d.TurnsByEngine[e]))
			row("day", d.Day, "cost_usd_engine_"+e, d.CostByEngine[e].USD())
		}
		for _, p := range r.Plans {
			row("day", d.Day, "turns_plan_"+p, n(d.TurnsByPlan[p]))
		}
		for _, k := range r.Kinds {
			row("day", d.Day, "errors_"+k, n(d.Errors[k]))
		}
		for _, part := range []struct {
			name string
			v    money.Micros
		}{{"cost_usd", d.Cost}, {"cost_usd_model_input", d.Input}, {"cost_usd_model_cached_input", d.Cached}, {"cost_usd_model_output", d.Output},
			{"cost_usd_model_not_split", d.ModelOther}, {"cost_usd_search", d.Search}, {"cost_usd_sandbox", d.Sandbox}, {"cost_usd_lost_attempts", d.Lost}, {"cost_usd_not_finished", d.Open}} {
			row("day", d.Day, part.name, part.v.USD())
		}
		row("day", d.Day, "tokens_prompt", n(d.TokensIn))
		row("day", d.Day, "tokens_cached_prompt", n(d.TokensCached))
		row("day", d.Day, "tokens_completion", n(d.TokensOut))
		row("day", d.Day, "turns_ran_code", n(d.CodeTurns))
		row("day", d.Day, "code_runs", n(d.CodeRuns))
	}
	dist := func(section string, d Dist, f func(int64) string) {
		row(section, "", "n", n(d.N))
		row(section, "", "p50", f(d.P50))
		row(section, "", "p90", f(d.P90))
		row(section, "", "p99", f(d.P99))
		row(section, "", "max", f(d.Max))
	}
	dollars := func(v int64) string { return money.Micros(v).USD() }
	dist("cost_per_turn_usd", r.CostPerTurn, dollars)
	for _, e := range r.Engines {
		dist("cost_per_turn_usd_engine_"+e, r.CostPerTurnByEngine[e], dollars)
	}
	dist("tokens_per_turn", r.TokensPerTurn, n)
	dist("duration_ms", r.Duration, n)
	dist("cost_per_user_day_usd", r.UserDayCost, dollars)
	row("cost_per_user_day_usd", "", "alarm_threshold", r.Config.Threshold.USD())
	row("cost_per_user_day_usd", "", "user_days_at_or_above_threshold", n(r.AboveThreshold))
	if r.Config.Cap > 0 {
		row("cost_per_user_day_usd", "", "cap", r.Config.Cap.USD())
		row("cost_per_user_day_usd", "", "user_days_at_or_above_cap", n(r.AboveCap))
	}
	for _, c := range r.Ceilings {
		s := "turns_per_user_day_plan_" + c.Plan
		dist(s, c.Turns, n)
		row(s, "", "ceiling", n(c.Limit))
		row(s, "", "user_days_at_ceiling", n(c.AtCeiling))
		row(s, "", "headroom_of_the_rest_p50", n(c.HeadroomP50))
		row(s, "", "headroom_of_the_rest_p90", n(c.HeadroomP90))
		for _, r := range c.WouldReach {
			name := "user_days_that_would_reach_" + n(r.Ceiling)
			if r.Bound {
				name += "_at_least"
			}
			row(s, "", name, n(r.UserDays))
		}
	}
	row("headline", "", "cost_usd_per_1000_turns", r.Per1000.USD())
	row("headline", "", "share_of_turns_that_ran_code", strconv.FormatFloat(r.CodeShare, 'f', 4, 64))
	cw.Flush()
	return cw.Error()
}
