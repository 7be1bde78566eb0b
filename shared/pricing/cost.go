package pricing

import (
	"fmt"
	"time"

	"github.com/commonly/runtime/shared/llm"
	"github.com/commonly/runtime/shared/money"
	"github.com/commonly/runtime/shared/runs"
)

// Bounds on the quantities priced, so that no product can overflow int64
// (with the rate bounds in table.go) and a corrupt count is an error
// rather than a wrapped-around amount. Each is far above anything real.
const (
	maxTokens        = 50_000_000    // per call
	maxQueries       = 1_000_000     // per turn
	maxSandboxMillis = 1_000_000_000 // about 11 days
)

// worstCaseHorizon is how far past its start a model call is assumed to
// run at most (Lambda stops at 15 minutes). WorstCase prices a call at
// the dearest rate in force at any time in it, so the bound holds
// whichever instant of the call it is finally priced at.
const worstCaseHorizon = time.Hour

// ModelCostParts prices one model call made at the instant at:
// cached prompt tokens at the cache-hit rate, the rest of the prompt
// (never below zero) at the cache-miss rate, completion tokens (which
// include reasoning) at the output rate, with the peak or off-peak rates
// in force at that instant. Each part is rounded up to a whole
// micro-dollar, so a call is priced at most 3 µ$ above its exact cost and
// never below it. It returns a run's cost to add (runs.Run.AddCost) whose
// ModelMicros is the call's cost and whose
// InputMicros, CachedInputMicros and OutputMicros are the three rounded
// parts that sum to it, so a report can split the model's cost exactly.
func (t *Table) ModelCostParts(model string, at time.Time, u llm.Usage) (runs.Cost, error) {
	for _, n := range []int64{u.PromptTokens, u.CachedPromptTokens, u.CompletionTokens} {
		if n < 0 || n > maxTokens {
			return runs.Cost{}, fmt.Errorf("pricing: token counts out of range: prompt %d, cached %d, completion %d", u.PromptTokens, u.CachedPromptTokens, u.CompletionTokens)
		}
	}
	p, err := t.priceAt(model, at)
	if err != nil {
		return runs.Cost{}, err
	}
	r := p.ratesAt(at)
	uncached := max(u.PromptTokens-u.CachedPromptTokens, 0)
	c := runs.Cost{
		CachedInputMicros: money.PerMillionTokens(r.InputCacheHit, u.CachedPromptTokens),
		InputMicros:       money.PerMillionTokens(r.InputCacheMiss, uncached),
		OutputMicros:      money.PerMillionTokens(r.Output, u.CompletionTokens),
	}
	c.ModelMicros = c.InputMicros + c.CachedInputMicros + c.OutputMicros
	return c, nil
}

// WorstCase is WorstCaseAt for a call starting now, by the table's clock
// (see WithClock).
func (t *Table) WorstCase(model string, promptTokens, maxOutputTokens int64) (money.Micros, error) {
	return t.WorstCaseAt(model, t.now(), promptTokens, maxOutputTokens)
}

// WorstCaseAt is the most a call started at the instant at can cost with
// this many prompt tokens and at most maxOutputTokens of output: the whole
// prompt at the cache-miss rate (a cache hit is best-effort) and the
// dearest of the peak and off-peak rates in force during the call. The
// money bound is checked against it before the call is made.
func (t *Table) WorstCaseAt(model string, at time.Time, promptTokens, maxOutputTokens int64) (money.Micros, error) {
	if promptTokens < 0 || promptTokens > maxTokens || maxOutputTokens < 0 || maxOutputTokens > maxTokens {
		return 0, fmt.Errorf("pricing: token counts out of range: prompt %d, max output %d", promptTokens, maxOutputTokens)
	}
	if _, err := t.priceAt(model, at); err != nil {
		return 0, err
	}
	var worst money.Micros
	end := at.Add(worstCaseHorizon)
	prices := t.models[model]
	for i, p := range prices {
		// Skip prices that ended before the call began or start after it.
		if (i+1 < len(prices) && !prices[i+1].from.After(at)) || p.from.After(end) {
			continue
		}
		for _, r := range p.tiers() {
			c := money.PerMillionTokens(r.InputCacheMiss, promptTokens) + money.PerMillionTokens(r.Output, maxOutputTokens)
			worst = max(worst, c)
		}
	}
	return worst, nil
}

// SearchCost prices a number of web search queries to a provider.
func (t *Table) SearchCost(provider string, queries int64) (money.Micros, error) {
	rate, ok := t.search[provider]
	if !ok {
		return 0, fmt.Errorf("%w for search provider %q", ErrUnpriced, provider)
	}
	if queries < 0 || queries > maxQueries {
		return 0, fmt.Errorf("pricing: search query count %d out of range", queries)
	}
	return rate.Times(queries), nil
}

// SandboxCost prices a sandbox's lifetime in milliseconds, rounded up to
// a whole micro-dollar.
func (t *Table) SandboxCost(provider string, millis int64) (money.Micros, error) {
	rate, ok := t.sandbox[provider]
	if !ok {
		return 0, fmt.Errorf("%w for sandbox provider %q", ErrUnpriced, provider)
	}
	if millis < 0 || millis > maxSandboxMillis {
		return 0, fmt.Errorf("pricing: sandbox duration %d ms out of range", millis)
	}
	// The rate is per second: a millisecond is a thousandth of its unit.
	return rate.TimesThousandths(millis), nil
}

// priceAt is the model's price in force at the instant at.
func (t *Table) priceAt(model string, at time.Time) (*modelPrice, error) {
	prices := t.models[model]
	if len(prices) == 0 {
		return nil, fmt.Errorf("%w for model %q", ErrUnpriced, model)
	}
	for i := len(prices) - 1; i >= 0; i-- {
		if !prices[i].from.After(at) {
			return &prices[i], nil
		}
	}
	return nil, fmt.Errorf("%w for model %q before %s", ErrUnpriced, model, prices[0].from.Format(time.RFC3339))
}

// ratesAt picks the flat, peak or off-peak rates for the instant at.
func (p *modelPrice) ratesAt(at time.Time) tokenRates {
	if p.schedules == nil {
		return p.flat
	}
	// Validation guarantees a schedule version in force from p.from on.
	for i := len(p.schedules) - 1; i >= 0; i-- {
		if !p.schedules[i].from.After(at) {
			if p.schedules[i].peak(at) {
				return p.peak
			}
			return p.offPeak
		}
	}
	return p.peak
}

// tiers are every set of rates the price may apply.
func (p *modelPrice) tiers() []tokenRates {
	if p.schedules == nil {
		return []tokenRates{p.flat}
	}
	return []tokenRates{p.peak, p.offPeak}
}
