package pricing

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/commonly/runtime/shared/money"
)

// The JSON shape of a price table file. Prices are decimal strings read
// exactly by money.ParseRate: a JSON number would invite a float.

type fileTable struct {
	Version   string                     `json:"version"`
	Schedules map[string][]fileSchedule  `json:"schedules"`
	Models    map[string][]fileModelRate `json:"models"`
	Search    map[string]fileSearch      `json:"search"`
	Sandbox   map[string]fileSandbox     `json:"sandbox"`
}

// fileSchedule is one version of a named peak schedule.
type fileSchedule struct {
	EffectiveFrom string       `json:"effectiveFrom"`
	Note          string       `json:"note"`
	Peak          []fileWindow `json:"peak"`
}

// fileWindow is a daily peak window in a fixed UTC offset, optionally
// restricted to some weekdays of that offset's calendar.
type fileWindow struct {
	UTCOffset string   `json:"utcOffset"`
	Days      []string `json:"days"`
	From      string   `json:"from"`
	To        string   `json:"to"`
}

// fileModelRate is the price of a model from an instant on: either flat,
// or peak and off-peak rates with the schedule that tells them apart.
type fileModelRate struct {
	EffectiveFrom string     `json:"effectiveFrom"`
	Note          string     `json:"note"`
	Flat          *fileRates `json:"flat"`
	PeakSchedule  string     `json:"peakSchedule"`
	Peak          *fileRates `json:"peak"`
	OffPeak       *fileRates `json:"offPeak"`
}

// fileRates are USD per million tokens.
type fileRates struct {
	InputCacheHit  price `json:"inputCacheHit"`
	InputCacheMiss price `json:"inputCacheMiss"`
	Output         price `json:"output"`
}

type fileSearch struct {
	USDPerQuery price  `json:"usdPerQuery"`
	Note        string `json:"note"`
}

type fileSandbox struct {
	USDPerSecond price  `json:"usdPerSecond"`
	Note         string `json:"note"`
}

// price is a decimal string that remembers whether it was given, so that a
// missing price is an error while an explicit "0" is a price.
type price struct {
	rate money.Rate
	set  bool
}

func (p *price) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("a price must be a decimal string such as \"0.28\", got %s", b)
	}
	r, err := money.ParseRate(s)
	if err != nil {
		return err
	}
	p.rate, p.set = r, true
	return nil
}

func (r *fileRates) parse(field string) (tokenRates, error) {
	if r == nil {
		return tokenRates{}, fmt.Errorf("%s: missing", field)
	}
	var missing []string
	for _, p := range []struct {
		name string
		p    price
	}{{"inputCacheHit", r.InputCacheHit}, {"inputCacheMiss", r.InputCacheMiss}, {"output", r.Output}} {
		if !p.p.set {
			missing = append(missing, p.name)
		}
	}
	if len(missing) > 0 {
		return tokenRates{}, fmt.Errorf("%s: missing %s", field, strings.Join(missing, ", "))
	}
	rates := tokenRates{InputCacheHit: r.InputCacheHit.rate, InputCacheMiss: r.InputCacheMiss.rate, Output: r.Output.rate}
	for _, rate := range []money.Rate{rates.InputCacheHit, rates.InputCacheMiss, rates.Output} {
		if exceeds(rate, maxUSDPerMillionTokens) {
			return tokenRates{}, fmt.Errorf("%s: %s USD per million tokens is above the sanity bound of %d", field, rate, maxUSDPerMillionTokens)
		}
	}
	return rates, nil
}

// exceeds reports whether r is above whole USD units. Rate.Times(1) is r
// in micro-dollars rounded up, so the comparison is exact at the bound.
func exceeds(r money.Rate, usd int64) bool { return int64(r.Times(1)) > usd*1_000_000 }
