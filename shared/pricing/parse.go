package pricing

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/commonly/runtime/shared/money"
)

// parse decodes a table file strictly and validates it whole: a table
// that loads prices every instant of every entry it holds.
func parse(data []byte) (*Table, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var f fileTable
	if err := dec.Decode(&f); err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("trailing data after the table")
	}
	t := &Table{
		version: strings.TrimSpace(f.Version),
		models:  map[string][]modelPrice{},
		search:  map[string]money.Rate{},
		sandbox: map[string]money.Rate{},
		now:     time.Now,
	}
	if t.version == "" {
		return nil, errors.New("version missing")
	}

	schedules := map[string][]schedule{}
	for name, versions := range f.Schedules {
		if strings.TrimSpace(name) == "" {
			return nil, errors.New("schedule with an empty name")
		}
		var parsed []schedule
		for _, v := range versions {
			s, err := parseSchedule(v)
			if err != nil {
				return nil, fmt.Errorf("schedule %q: %w", name, err)
			}
			parsed = append(parsed, s)
		}
		if err := sortByFrom(parsed, func(s schedule) time.Time { return s.from }); err != nil {
			return nil, fmt.Errorf("schedule %q: %w", name, err)
		}
		schedules[name] = parsed
	}

	if len(f.Models) == 0 {
		return nil, errors.New("no models")
	}
	for name, entries := range f.Models {
		if strings.TrimSpace(name) == "" {
			return nil, errors.New("model with an empty name")
		}
		var prices []modelPrice
		for _, e := range entries {
			p, err := parseModelPrice(e, schedules)
			if err != nil {
				return nil, fmt.Errorf("model %q: %w", name, err)
			}
			prices = append(prices, p)
		}
		if len(prices) == 0 {
			return nil, fmt.Errorf("model %q: no prices", name)
		}
		if err := sortByFrom(prices, func(p modelPrice) time.Time { return p.from }); err != nil {
			return nil, fmt.Errorf("model %q: %w", name, err)
		}
		t.models[name] = prices
	}

	for name, s := range f.Search {
		if err := checkUnitPrice(name, s.USDPerQuery, "usdPerQuery", maxUSDPerQuery); err != nil {
			return nil, fmt.Errorf("search: %w", err)
		}
		t.search[name] = s.USDPerQuery.rate
	}
	for name, s := range f.Sandbox {
		if err := checkUnitPrice(name, s.USDPerSecond, "usdPerSecond", maxUSDPerSecond); err != nil {
			return nil, fmt.Errorf("sandbox: %w", err)
		}
		t.sandbox[name] = s.USDPerSecond.rate
	}
	return t, nil
}

func parseModelPrice(e fileModelRate, schedules map[string][]schedule) (modelPrice, error) {
	from, err := parseInstant(e.EffectiveFrom)
	if err != nil {
		return modelPrice{}, err
	}
	p := modelPrice{from: from}
	at := "effective " + e.EffectiveFrom
	if e.Flat != nil {
		if e.PeakSchedule != "" || e.Peak != nil || e.OffPeak != nil {
			return modelPrice{}, fmt.Errorf("%s: flat excludes peakSchedule, peak and offPeak", at)
		}
		if p.flat, err = e.Flat.parse("flat"); err != nil {
			return modelPrice{}, fmt.Errorf("%s: %w", at, err)
		}
		return p, nil
	}
	if e.PeakSchedule == "" {
		return modelPrice{}, fmt.Errorf("%s: give flat, or peakSchedule with peak and offPeak", at)
	}
	if p.peak, err = e.Peak.parse("peak"); err != nil {
		return modelPrice{}, fmt.Errorf("%s: %w", at, err)
	}
	if p.offPeak, err = e.OffPeak.parse("offPeak"); err != nil {
		return modelPrice{}, fmt.Errorf("%s: %w", at, err)
	}
	p.schedules = schedules[e.PeakSchedule]
	if len(p.schedules) == 0 {
		return modelPrice{}, fmt.Errorf("%s: unknown peakSchedule %q", at, e.PeakSchedule)
	}
	// Without this, a call between the price's start and the schedule's
	// would have no way to tell peak from off-peak.
	if p.schedules[0].from.After(from) {
		return modelPrice{}, fmt.Errorf("%s: peakSchedule %q starts later, at %s", at, e.PeakSchedule, p.schedules[0].from.Format(time.RFC3339))
	}
	return p, nil
}

func checkUnitPrice(name string, p price, field string, maxUSD int64) error {
	if strings.TrimSpace(name) == "" {
		return errors.New("provider with an empty name")
	}
	if !p.set {
		return fmt.Errorf("%q: %s missing (write \"0\" for a free provider)", name, field)
	}
	if exceeds(p.rate, maxUSD) {
		return fmt.Errorf("%q: %s %s is above the sanity bound of %d", name, field, p.rate, maxUSD)
	}
	return nil
}

// sortByFrom orders versions by start and rejects two starting together:
// which one applies would otherwise depend on the file's order.
func sortByFrom[T any](xs []T, from func(T) time.Time) error {
	slices.SortFunc(xs, func(a, b T) int { return from(a).Compare(from(b)) })
	for i := 1; i < len(xs); i++ {
		if from(xs[i]).Equal(from(xs[i-1])) {
			return fmt.Errorf("two versions effective at %s", from(xs[i]).Format(time.RFC3339))
		}
	}
	return nil
}
