package ledger

import (
	"cmp"

	"github.com/commonly/runtime/shared/money"
)

// Digest is a user-day's figures for the usage report (infra/report),
// recomputed from the day's ledger at every write of it and written with
// it, in the same conditional write: it is exactly once because the
// ledger is, and its CostMicros is the ledger's total to the
// micro-dollar. The report reads digests, never runs.
//
// A run counts as a turn once its finished record is counted; the cost
// of a run still open counts in CostMicros and OpenMicros only.
type Digest struct {
	Turns    int64                    `dynamodbav:"n"`
	Refunded int64                    `dynamodbav:"nr,omitempty"`
	ByEngine map[string]EngineFigures `dynamodbav:"e,omitempty"`
	ByPlan   map[string]int64         `dynamodbav:"p,omitempty"`
	Errors   map[string]int64         `dynamodbav:"k,omitempty"`

	CostMicros money.Micros `dynamodbav:"c"`
	// OpenMicros is the cost of runs not finished when the day was last
	// written; the rest splits into the parts below.
	OpenMicros    money.Micros `dynamodbav:"o,omitempty"`
	ModelMicros   money.Micros `dynamodbav:"m,omitempty"`
	InputMicros   money.Micros `dynamodbav:"mi,omitempty"`
	CachedMicros  money.Micros `dynamodbav:"mc,omitempty"`
	OutputMicros  money.Micros `dynamodbav:"mo,omitempty"`
	SearchMicros  money.Micros `dynamodbav:"ws,omitempty"`
	SandboxMicros money.Micros `dynamodbav:"sb,omitempty"`
	// Resumed are the turns another worker took over after one stopped;
	// LostMicros what the stopped attempts may have cost beyond their
	// record (estimated, part of CostMicros).
	Resumed    int64        `dynamodbav:"nrs,omitempty"`
	LostMicros money.Micros `dynamodbav:"lm,omitempty"`

	TokensIn     int64 `dynamodbav:"ti,omitempty"`
	TokensCached int64 `dynamodbav:"tc,omitempty"`
	TokensOut    int64 `dynamodbav:"to,omitempty"`

	// CodeTurns are the turns that ran code, CodeRuns their executions.
	CodeTurns int64 `dynamodbav:"x,omitempty"`
	CodeRuns  int64 `dynamodbav:"xr,omitempty"`

	// Per turn: cost (micro-dollars), tokens (prompt + completion) and
	// duration (ms), as histograms and their exact maxima.
	CostHist      Hist         `dynamodbav:"hc,omitempty"`
	TokensHist    Hist         `dynamodbav:"ht,omitempty"`
	DurationHist  Hist         `dynamodbav:"hd,omitempty"`
	MaxCost       money.Micros `dynamodbav:"xc,omitempty"`
	MaxTokens     int64        `dynamodbav:"xt,omitempty"`
	MaxDurationMs int64        `dynamodbav:"xd,omitempty"`
}

// EngineFigures are a user-day's finished turns on one engine.
type EngineFigures struct {
	Turns      int64        `dynamodbav:"n"`
	CostMicros money.Micros `dynamodbav:"c"`
	CostHist   Hist         `dynamodbav:"hc,omitempty"`
	MaxCost    money.Micros `dynamodbav:"xc,omitempty"`
}

// Plan is the plan most of the day's turns were admitted under (the
// later in name order on a tie): the ceiling the day is measured against.
func (d Digest) Plan() string {
	best, n := "", int64(-1)
	for p, c := range d.ByPlan {
		if c > n || (c == n && p > best) {
			best, n = p, c
		}
	}
	return best
}

// DigestOf computes a user-day's digest from its ledger.
func DigestOf(b Book) Digest {
	d := Digest{CostMicros: b.CostMicros}
	var costs, tokens, durations []int64
	engineCosts := map[string][]int64{}
	for _, c := range b.Runs {
		f := c.Facts
		if f == nil {
			d.OpenMicros += c.CostMicros
			continue
		}
		d.Turns++
		if f.Refunded {
			d.Refunded++
		}
		engine := cmp.Or(f.Engine, "unknown")
		e := d.ByEngine[engine]
		e.Turns++
		e.CostMicros += c.CostMicros
		e.MaxCost = max(e.MaxCost, c.CostMicros)
		if d.ByEngine == nil {
			d.ByEngine = map[string]EngineFigures{}
		}
		d.ByEngine[engine] = e
		engineCosts[engine] = append(engineCosts[engine], int64(c.CostMicros))
		d.ByPlan = inc(d.ByPlan, cmp.Or(f.Plan, "unknown"))
		if f.Kind != "" {
			d.Errors = inc(d.Errors, f.Kind)
		}
		d.ModelMicros += f.Model
		d.InputMicros += f.Input
		d.CachedMicros += f.Cached
		d.OutputMicros += f.Output
		d.SearchMicros += f.Search
		d.SandboxMicros += f.Sandbox
		d.LostMicros += f.Lost
		if f.Resumed {
			d.Resumed++
		}
		d.TokensIn += f.TokensIn
		d.TokensCached += f.TokensCached
		d.TokensOut += f.TokensOut
		if f.CodeRuns > 0 {
			d.CodeTurns++
			d.CodeRuns += f.CodeRuns
		}
		t := f.TokensIn + f.TokensOut
		costs, tokens, durations = append(costs, int64(c.CostMicros)), append(tokens, t), append(durations, f.DurationMs)
		d.MaxCost, d.MaxTokens, d.MaxDurationMs = max(d.MaxCost, c.CostMicros), max(d.MaxTokens, t), max(d.MaxDurationMs, f.DurationMs)
	}
	d.CostHist, d.TokensHist, d.DurationHist = histOf(costs), histOf(tokens), histOf(durations)
	for name, cs := range engineCosts {
		e := d.ByEngine[name]
		e.CostHist = histOf(cs)
		d.ByEngine[name] = e
	}
	return d
}

func inc(m map[string]int64, k string) map[string]int64 {
	if m == nil {
		m = map[string]int64{}
	}
	m[k]++
	return m
}
