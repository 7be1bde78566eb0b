package agent

import (
	"fmt"
	"strings"
	"time"

	"github.com/commonly/runtime/shared/money"
	"github.com/commonly/runtime/shared/runs"
)

// Default bounds of one turn.
const (
	DefaultMaxModelCalls   = 10
	DefaultMaxTokens       = 50_000
	DefaultMaxWall         = 170 * time.Second
	DefaultMaxCost         = runs.DefaultTurnMaxCost
	DefaultRepeatLimit     = 3
	DefaultPostGrace       = 5 * time.Second
	DefaultMaxOutputTokens = 2048
)

// Limits bound one turn. A zero or negative field means its default, so
// tests set only the bound they exercise.
type Limits struct {
	// MaxModelCalls caps the model calls of a turn (errorKind turn_cap).
	MaxModelCalls int
	// MaxTokens caps prompt+completion tokens over all calls (token_cap).
	MaxTokens int64
	// MaxWall caps the turn's wall-clock time from its start (timeout).
	MaxWall time.Duration
	// MaxCost caps the turn's price (budget_cap): no model call starts
	// whose worst case would take the turn past it.
	MaxCost money.Micros
	// RepeatLimit is how many identical tool calls in a row end the turn
	// (turn_cap): a model that repeats itself will not stop on its own.
	RepeatLimit int
	// PostGrace is the least time given to posting the final answer,
	// even past MaxWall: the answer is paid for already, and Lambda's own
	// timeout remains the backstop.
	PostGrace time.Duration
}

func (l Limits) withDefaults() Limits {
	if l.MaxModelCalls <= 0 {
		l.MaxModelCalls = DefaultMaxModelCalls
	}
	if l.MaxTokens <= 0 {
		l.MaxTokens = DefaultMaxTokens
	}
	if l.MaxWall <= 0 {
		l.MaxWall = DefaultMaxWall
	}
	if l.MaxCost <= 0 {
		l.MaxCost = DefaultMaxCost
	}
	if l.RepeatLimit <= 0 {
		l.RepeatLimit = DefaultRepeatLimit
	}
	if l.PostGrace <= 0 {
		l.PostGrace = DefaultPostGrace
	}
	return l
}

// ParseMaxCost reads TURN_MAX_USD ("0.25"); empty means the default. Zero
// is refused rather than read as "no limit" or "no turn can run".
func ParseMaxCost(usd string) (money.Micros, error) {
	usd = strings.TrimSpace(usd)
	if usd == "" {
		return DefaultMaxCost, nil
	}
	m, err := money.FromUSD(usd)
	if err != nil {
		return 0, fmt.Errorf("TURN_MAX_USD: %w", err)
	}
	if m <= 0 {
		return 0, fmt.Errorf("TURN_MAX_USD: %q must be more than zero", usd)
	}
	return m, nil
}
