package usage

import (
	"maps"
	"slices"

	"github.com/commonly/runtime/shared/ledger"
	"github.com/commonly/runtime/shared/money"
	"github.com/commonly/runtime/shared/store"
	"github.com/commonly/runtime/shared/turns"
)

// Day is one UTC day's figures, summed over its user-days.
type Day struct {
	Day           string
	UserDays      int64
	Turns         int64
	Refunded      int64
	TurnsByEngine map[string]int64
	TurnsByPlan   map[string]int64
	Errors        map[string]int64
	// Cost is the ledgers' total; it splits into CostByEngine (finished
	// turns) plus Open, and into the parts below (Lost included) plus Open.
	Cost         money.Micros
	Open         money.Micros
	CostByEngine map[string]money.Micros
	Input        money.Micros
	Cached       money.Micros
	Output       money.Micros
	// ModelOther is model cost recorded without its parts (runs priced
	// before the split was recorded, or by another engine's own report).
	ModelOther money.Micros
	Search     money.Micros
	Sandbox    money.Micros
	// Resumed are the turns another worker took over after one stopped,
	// Lost what the stopped attempts may have cost beyond their record
	// (estimated; part of Cost).
	Resumed      int64
	Lost         money.Micros
	TokensIn     int64
	TokensCached int64
	TokensOut    int64
	CodeTurns    int64
	CodeRuns     int64
}

// Dist is a distribution's summary. From histograms a percentile is the
// upper bound of the bucket it falls in (at most 12.2% above the exact
// value, ledger.Hist) and never above the exact maximum; Exact says the
// values were all at hand.
type Dist struct {
	N                  int64
	P50, P90, P99, Max int64
	Exact              bool
}

// Ceiling is how a plan's user-days stood against its daily ceiling.
type Ceiling struct {
	Plan     string
	Limit    int64
	UserDays int64
	// AtCeiling are the user-days that used every turn of the ceiling.
	AtCeiling int64
	// Turns is the distribution of charged turns (refunds excluded) a
	// user-day; Counts the user-days by charged turns, 0..max.
	Turns  Dist
	Counts []int64
	// HeadroomP50 and HeadroomP90 are how far under the ceiling the
	// user-days that did not reach it stayed: the ceiling minus their
	// median and their p90 turns.
	HeadroomP50, HeadroomP90 int64
	// WouldReach is, for other ceilings, how many of the plan's user-days
	// used at least that many turns: those that would have reached it. A
	// ceiling above the current one is a lower bound, since no day could
	// use more turns than the ceiling it had.
	WouldReach []Reach
}

// Reach is how many user-days reach a ceiling.
type Reach struct {
	Ceiling  int64
	UserDays int64
	// Bound says the count is a lower bound (above the current ceiling).
	Bound bool
}

// candidateCeilings are the other ceilings the page weighs.
var candidateCeilings = []int64{5, 10, 20, 30, 50, 100, 200}

// Report is every figure the page and the CSV show.
type Report struct {
	Config Config
	Days   []Day
	Total  Day
	// Engines, Plans and Kinds are the names seen, sorted.
	Engines, Plans, Kinds []string

	CostPerTurn         Dist
	CostPerTurnByEngine map[string]Dist
	TokensPerTurn       Dist
	Duration            Dist
	CostHist            map[int]int64
	TokensHist          map[int]int64
	DurationHist        map[int]int64

	// UserDayCost is exact: every user-day's total.
	UserDayCost     Dist
	UserDayCostHist map[int]int64
	AboveThreshold  int64
	AboveCap        int64
	Ceilings        []Ceiling

	// Per1000 is the cost of 1,000 finished turns at the period's mean.
	Per1000   money.Micros
	CodeShare float64
}

// Builder folds user-days into a Report, one at a time, keeping per
// user-day only its cost and charged turns.
type Builder struct {
	cfg          Config
	days         map[string]*Day
	costHist     map[int]int64
	tokensHist   map[int]int64
	durationHist map[int]int64
	engineHist   map[string]map[int]int64
	maxCost      int64
	maxTokens    int64
	maxDuration  int64
	engineMax    map[string]int64
	userDayCost  []int64
	planTurns    map[string][]int64
}

// NewBuilder starts a report of cfg's days.
func NewBuilder(cfg Config) *Builder {
	b := &Builder{cfg: cfg, days: map[string]*Day{}, costHist: map[int]int64{}, tokensHist: map[int]int64{}, durationHist: map[int]int64{},
		engineHist: map[string]map[int]int64{}, engineMax: map[string]int64{}, planTurns: map[string][]int64{}}
	for _, d := range cfg.Days() {
		b.days[d] = newDay(d)
	}
	return b
}

func newDay(d string) *Day {
	return &Day{Day: d, TurnsByEngine: map[string]int64{}, TurnsByPlan: map[string]int64{}, Errors: map[string]int64{}, CostByEngine: map[string]money.Micros{}}
}

// Add folds one user-day in; a day outside the report is ignored.
func (b *Builder) Add(u store.UserDay) {
	day := b.days[u.Day]
	if day == nil {
		return
	}
	g := u.Digest
	day.UserDays++
	day.Turns += g.Turns
	day.Refunded += g.Refunded
	for e, f := range g.ByEngine {
		day.TurnsByEngine[e] += f.Turns
		day.CostByEngine[e] += f.CostMicros
		h := b.engineHist[e]
		if h == nil {
			h = map[int]int64{}
			b.engineHist[e] = h
		}
		f.CostHist.AddTo(h)
		b.engineMax[e] = max(b.engineMax[e], int64(f.MaxCost))
	}
	for p, n := range g.ByPlan {
		day.TurnsByPlan[p] += n
	}
	for k, n := range g.Errors {
		day.Errors[k] += n
	}
	day.Cost += g.CostMicros
	day.Open += g.OpenMicros
	day.Input += g.InputMicros
	day.Cached += g.CachedMicros
	day.Output += g.OutputMicros
	day.ModelOther += max(g.ModelMicros-g.InputMicros-g.CachedMicros-g.OutputMicros, 0)
	day.Search += g.SearchMicros
	day.Sandbox += g.SandboxMicros
	day.Resumed += g.Resumed
	day.Lost += g.LostMicros
	day.TokensIn += g.TokensIn
	day.TokensCached += g.TokensCached
	day.TokensOut += g.TokensOut
	day.CodeTurns += g.CodeTurns
	day.CodeRuns += g.CodeRuns
	g.CostHist.AddTo(b.costHist)
	g.TokensHist.AddTo(b.tokensHist)
	g.DurationHist.AddTo(b.durationHist)
	b.maxCost = max(b.maxCost, int64(g.MaxCost))
	b.maxTokens = max(b.maxTokens, g.MaxTokens)
	b.maxDuration = max(b.maxDuration, g.MaxDurationMs)
	b.userDayCost = append(b.userDayCost, int64(g.CostMicros))
	if p := g.Plan(); p != "" {
		b.planTurns[p] = append(b.planTurns[p], g.Turns-g.Refunded)
	}
}

// Report finishes the figures.
func (b *Builder) Report() *Report {
	r := &Report{Config: b.cfg, Total: *newDay("total"), CostPerTurnByEngine: map[string]Dist{},
		CostHist: b.costHist, TokensHist: b.tokensHist, DurationHist: b.durationHist, UserDayCostHist: map[int]int64{}}
	engines, plans, kinds := map[string]bool{}, map[string]bool{}, map[string]bool{}
	for _, d := range b.cfg.Days() {
		day := b.days[d]
		r.Days = append(r.Days, *day)
		t := &r.Total
		t.UserDays += day.UserDays
		t.Turns += day.Turns
		t.Refunded += day.Refunded
		sumInto(t.TurnsByEngine, day.TurnsByEngine, engines)
		sumInto(t.TurnsByPlan, day.TurnsByPlan, plans)
		sumInto(t.Errors, day.Errors, kinds)
		for e, c := range day.CostByEngine {
			t.CostByEngine[e] += c
			engines[e] = true
		}
		t.Cost += day.Cost
		t.Open += day.Open
		t.Input += day.Input
		t.Cached += day.Cached
		t.Output += day.Output
		t.ModelOther += day.ModelOther
		t.Search += day.Search
		t.Sandbox += day.Sandbox
		t.Resumed += day.Resumed
		t.Lost += day.Lost
		t.TokensIn += day.TokensIn
		t.TokensCached += day.TokensCached
		t.TokensOut += day.TokensOut
		t.CodeTurns += day.CodeTurns
		t.CodeRuns += day.CodeRuns
	}
	for p := range b.planTurns {
		plans[p] = true
	}
	r.Engines, r.Plans, r.Kinds = sortedKeys(engines), sortedKeys(plans), sortedKeys(kinds)

	r.CostPerTurn = histDist(b.costHist, b.maxCost)
	for e, h := range b.engineHist {
		r.CostPerTurnByEngine[e] = histDist(h, b.engineMax[e])
	}
	r.TokensPerTurn = histDist(b.tokensHist, b.maxTokens)
	r.Duration = histDist(b.durationHist, b.maxDuration)

	r.UserDayCost = exactDist(b.userDayCost)
	for _, c := range b.userDayCost {
		r.UserDayCostHist[ledger.Bucket(c)]++
		if c >= int64(b.cfg.Threshold) {
			r.AboveThreshold++
		}
		if b.cfg.Cap > 0 && c >= int64(b.cfg.Cap) {
			r.AboveCap++
		}
	}
	for _, p := range r.Plans {
		ts := b.planTurns[p]
		limit, known := b.cfg.Limits[turns.Plan(p)]
		c := Ceiling{Plan: p, Limit: limit, UserDays: int64(len(ts)), Turns: exactDist(ts)}
		if !known {
			c.Limit = -1
		}
		top := c.Turns.Max
		c.Counts = make([]int64, top+1)
		var under []int64
		for _, n := range ts {
			c.Counts[max(n, 0)]++
			if known && n >= limit {
				c.AtCeiling++
			} else {
				under = append(under, n)
			}
		}
		if u := exactDist(under); known && u.N > 0 {
			c.HeadroomP50, c.HeadroomP90 = limit-u.P50, limit-u.P90
		}
		for _, ceil := range candidateCeilings {
			r := Reach{Ceiling: ceil, Bound: known && ceil > limit}
			for _, n := range ts {
				if n >= ceil {
					r.UserDays++
				}
			}
			c.WouldReach = append(c.WouldReach, r)
		}
		r.Ceilings = append(r.Ceilings, c)
	}
	if r.Total.Turns > 0 {
		// Finished turns' cost; an open run's cost is not yet a turn's.
		r.Per1000 = money.Micros((int64(r.Total.Cost-r.Total.Open)*1000 + r.Total.Turns/2) / r.Total.Turns)
		r.CodeShare = float64(r.Total.CodeTurns) / float64(r.Total.Turns)
	}
	return r
}

func sumInto(into, from map[string]int64, seen map[string]bool) {
	for k, v := range from {
		into[k] += v
		seen[k] = true
	}
}

func sortedKeys(m map[string]bool) []string { return slices.Sorted(maps.Keys(m)) }

// histDist reads a distribution off a histogram.
func histDist(h map[int]int64, maxV int64) Dist {
	var n int64
	for _, c := range h {
		n += c
	}
	d := Dist{N: n, Max: maxV}
	if n == 0 {
		return d
	}
	buckets := slices.Sorted(maps.Keys(h))
	at := func(q float64) int64 {
		rank := rankOf(q, n)
		var seen int64
		for _, b := range buckets {
			seen += h[b]
			if seen >= rank {
				return min(ledger.BucketUpper(b), maxV)
			}
		}
		return maxV
	}
	d.P50, d.P90, d.P99 = at(0.50), at(0.90), at(0.99)
	return d
}

// exactDist sorts values (in place) and reads the distribution off them.
func exactDist(values []int64) Dist {
	d := Dist{N: int64(len(values)), Exact: true}
	if len(values) == 0 {
		return d
	}
	slices.Sort(values)
	at := func(q float64) int64 { return values[rankOf(q, d.N)-1] }
	d.P50, d.P90, d.P99, d.Max = at(0.50), at(0.90), at(0.99), values[len(values)-1]
	return d
}

// rankOf is the nearest-rank percentile's rank, 1..n.
func rankOf(q float64, n int64) int64 {
	r := int64(q*float64(n) + 0.999999999)
	return min(max(r, 1), n)
}
