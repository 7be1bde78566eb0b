package scale

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// TargetUsers is the size the target is set at: a million daily users.
const TargetUsers = 1e6

// renderSizes is the table of a turn at each memory size make memsize
// measured, with and without a watcher.
func (m Model) renderSizes(b *strings.Builder) {
	f := m.Compute(TargetUsers)
	var sizes []float64
	for k := range m.In.Turn.OwnMillisAtMB {
		if v, err := strconv.Atoi(k); err == nil && v > 0 {
			sizes = append(sizes, float64(v))
		}
	}
	sort.Float64s(sizes)
	fmt.Fprintf(b, "\nA turn at each memory size, the turn and the events function both at it (a million daily users, every turn watched once; the turn function's own time a turn as `make memsize` measured it, `turn.ownMillisAtMB`):\n\n")
	b.WriteString("| MB | turn function's own time a turn | turn function a turn | watching a turn | a turn without a watcher | with a watcher | the watcher's share of the turn / of its infrastructure | infrastructure / the model's |\n|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	rest := f.CostPerTurn - f.Cost["watching"] - f.Cost["data out"] - m.turnLambda(m.MemoryMB["TurnFunction"])
	infraRest := f.Infra - f.Cost["watching"] - m.turnLambda(m.MemoryMB["TurnFunction"])
	for _, mbv := range sizes {
		own, _ := m.ownMillis(mbv)
		turn := m.turnLambda(mbv)
		w := m.watcher(mbv, mbv)
		without := rest + turn
		with := without + w.Total() + w.DataOut
		infra := infraRest + turn + w.Total()
		mark := ""
		if mbv == m.MemoryMB["TurnFunction"] || mbv == m.MemoryMB["EventsFunction"] {
			mark = " (deployed: " + m.deployedAt(mbv) + ")"
		}
		fmt.Fprintf(b, "| %s%s | %s ms | %s | %s | %s | %s | %s / %s | %s |\n", trim(mbv), mark, num(own), usd(turn), usd(w.Total()), usd(without), usd(with),
			pct1(w.Total()/with), pct1(w.Total()/infra), pct1(infra/f.Cost["model"]))
	}
}

// deployedAt names the functions deployed at mb.
func (m Model) deployedAt(mbv float64) string {
	var fns []string
	for _, id := range []string{"TurnFunction", "EventsFunction"} {
		if m.MemoryMB[id] == mbv {
			fns = append(fns, strings.TrimSuffix(strings.ToLower(id), "function"))
		}
	}
	return strings.Join(fns, ", ")
}

// renderDesigns is the comparison of the designs that stop paying for
// waiting, at a million daily users.
func (m Model) renderDesigns(b *strings.Builder) {
	f := m.Compute(TargetUsers)
	base := f.base(m)
	model := f.Cost["model"]
	target := m.In.TargetShare * model
	fmt.Fprintf(b, "\nWhat it would take, at a million daily users, every turn watched once. The model's cost a turn is %s, so the target of %s leaves %s a turn for all infrastructure; DynamoDB, EventBridge, logs and the alarm's and reaper's Lambda take %s (%s) in every design, leaving %s for the worker and the watcher.\n\n",
		usd(model), pct(m.In.TargetShare), usd(target), usd(base), pct1(base/model), usd(target-base))
	workers, watchers := m.WorkerDesigns(), m.WatcherDesigns()
	b.WriteString("| The worker | a turn | what it counts |\n|---|---:|---|\n")
	for _, d := range workers {
		fmt.Fprintf(b, "| %s | %s | %s |\n", d.Name, usd(d.USD), d.Note)
	}
	b.WriteString("\n| The watcher | a turn | a chunk's delay after the worker's flush | what it counts |\n|---|---:|---|---|\n")
	for _, d := range watchers {
		fmt.Fprintf(b, "| %s | %s | %s | %s |\n", d.Name, usd(d.USD), d.Delay, d.Note)
	}
	b.WriteString("\nInfrastructure a turn, and its share of the model's cost, for each worker (rows) with each watcher (columns):\n\n| |")
	for _, w := range watchers {
		fmt.Fprintf(b, " %s |", w.Name)
	}
	b.WriteString("\n|---|")
	for range watchers {
		b.WriteString("---:|")
	}
	b.WriteString("\n")
	for _, wk := range workers {
		fmt.Fprintf(b, "| %s |", wk.Name)
		for _, w := range watchers {
			total := base + wk.USD + w.USD
			mark := ""
			if total <= target {
				mark = " ✓"
			}
			fmt.Fprintf(b, " %s, %s%s |", usd(total), pct1(total/model), mark)
		}
		b.WriteString("\n")
	}
	b.WriteString("\n✓: within the target.\n")
}

// renderPrices lists every price the model used, with its unit, date
// and source.
func (m Model) renderPrices(b *strings.Builder) {
	b.WriteString("\nThe prices, each with its date and source. " + m.In.PricesNote + "\n\n| Price | USD | unit | date | source |\n|---|---:|---|---|---|\n")
	for _, k := range neededPrices {
		p := m.In.Prices[k]
		fmt.Fprintf(b, "| %s | %s | %s | %s | %s |\n", k, strconv.FormatFloat(p.USD, 'f', -1, 64), p.Unit, p.Date, p.Source)
	}
}
