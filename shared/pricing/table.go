// Package pricing is the versioned price table every cost in the runtime
// is computed from: model tokens (with DeepSeek's peak and off-peak
// hours), web search queries and sandbox seconds.
//
// The table is data, kept in the repository as prices.json and embedded in
// every binary; PRICE_TABLE_FILE points at a replacement when prices move
// before a deploy. Its version is stamped on every run so a cost can be
// traced to the prices it was computed with. A model, search provider or
// sandbox the table does not price is an error, never a zero: the runtime
// refuses to start rather than serve a turn for free.
package pricing

import (
	_ "embed"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/commonly/runtime/shared/money"
)

// FileEnv names the environment variable that overrides the embedded table.
const FileEnv = "PRICE_TABLE_FILE"

//go:embed prices.json
var embedded []byte

var (
	// ErrUnpriced: the table has no price for a model, provider or instant.
	ErrUnpriced = errors.New("pricing: no price")
	// ErrInvalidTable: a price table file failed validation.
	ErrInvalidTable = errors.New("pricing: invalid price table")
)

// Sanity bounds. They keep every product in int64 (tokens × billionths of
// a dollar) and catch a price typed in the wrong unit.
const (
	maxUSDPerMillionTokens = 100
	maxUSDPerQuery         = 10
	maxUSDPerSecond        = 1
)

// tokenRates are a model's prices in USD per million tokens.
type tokenRates struct {
	InputCacheHit  money.Rate
	InputCacheMiss money.Rate
	Output         money.Rate
}

// Table is a loaded, validated price table. It is immutable and safe for
// concurrent use.
type Table struct {
	version string
	models  map[string][]modelPrice // ascending effectiveFrom
	search  map[string]money.Rate
	sandbox map[string]money.Rate
	// now is the clock of WorstCase, whose callers have no instant to give.
	now func() time.Time
}

// modelPrice is a model's price from an instant until the next one.
type modelPrice struct {
	from time.Time
	// flat applies at all times when schedules is nil; otherwise peak and
	// offPeak apply as the schedule in force says.
	flat, peak, offPeak tokenRates
	schedules           []schedule // the named schedule's versions, ascending
}

// Load reads the table at path, or the embedded one when path is empty.
func Load(path string) (*Table, error) {
	if path == "" {
		t, err := Parse(embedded)
		if err != nil {
			return nil, fmt.Errorf("embedded prices.json: %w", err)
		}
		return t, nil
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("pricing: reading %s: %w", path, err)
	}
	t, err := Parse(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return t, nil
}

// Parse reads and validates a price table. Every error wraps ErrInvalidTable.
func Parse(data []byte) (*Table, error) {
	t, err := parse(data)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidTable, err)
	}
	return t, nil
}

// WithClock returns a copy of the table whose WorstCase reads the time
// from now.
func (t *Table) WithClock(now func() time.Time) *Table {
	c := *t
	c.now = now
	return &c
}

// Version identifies the table; it is stamped on every run's cost.
func (t *Table) Version() string { return t.version }

// Model returns nil when the table prices the model, and an ErrUnpriced
// error otherwise. The runtime checks its configured models at start-up.
func (t *Table) Model(name string) error {
	if len(t.models[name]) == 0 {
		return fmt.Errorf("%w for model %q", ErrUnpriced, name)
	}
	return nil
}

// Search returns nil when the table prices the search provider.
func (t *Table) Search(provider string) error {
	if _, ok := t.search[provider]; !ok {
		return fmt.Errorf("%w for search provider %q", ErrUnpriced, provider)
	}
	return nil
}

// Sandbox returns nil when the table prices the sandbox provider (a free
// provider is priced, at zero).
func (t *Table) Sandbox(provider string) error {
	if _, ok := t.sandbox[provider]; !ok {
		return fmt.Errorf("%w for sandbox provider %q", ErrUnpriced, provider)
	}
	return nil
}
