// Package money holds the one representation of money in the runtime:
// integer micro-dollars. Floats never carry an amount; they appear only at
// the edges (JSON for people, price tables written by people).
package money

import (
	"fmt"
	"math"
	"math/big"
	"strings"
)

// Micros is an amount in millionths of a US dollar.
type Micros int64

// PerMillionTokens converts a price quoted in USD per million tokens and a
// token count into micro-dollars. A price of P USD per 1M tokens is exactly
// P micro-dollars per token, so the product is exact up to the rounding of
// P itself; fractions of a micro-dollar are rounded up so that a turn is
// never priced below what it cost.
func PerMillionTokens(usdPerMillion Rate, tokens int64) Micros {
	if tokens <= 0 || usdPerMillion.nanos <= 0 {
		return 0
	}
	// A rate of P USD per 1M tokens is P micro-dollars per token, and
	// nanos = P*1e9: ceil(tokens*nanos/1e9).
	return Micros(ceilDiv(tokens*usdPerMillion.nanos, 1_000_000_000))
}

// Rate is a non-negative price quoted with up to 9 decimal places (for
// example USD per million tokens, or USD per query), stored in
// billionths so that the arithmetic stays in integers.
type Rate struct{ nanos int64 }

// ParseRate reads a decimal price such as "0.0028" or "1.5".
func ParseRate(s string) (Rate, error) {
	s = strings.TrimSpace(s)
	r, ok := new(big.Rat).SetString(s)
	if !ok || r.Sign() < 0 {
		return Rate{}, fmt.Errorf("money: %q is not a non-negative decimal price", s)
	}
	n := new(big.Rat).Mul(r, big.NewRat(1_000_000_000, 1))
	if !n.IsInt() {
		return Rate{}, fmt.Errorf("money: %q has more than 9 decimal places", s)
	}
	if !n.Num().IsInt64() {
		return Rate{}, fmt.Errorf("money: %q is out of range", s)
	}
	return Rate{nanos: n.Num().Int64()}, nil
}

// Times prices n units at a per-unit rate in USD, rounding up to a whole micro-dollar.
func (r Rate) Times(n int64) Micros {
	if n <= 0 || r.nanos <= 0 {
		return 0
	}
	return Micros(ceilDiv(n*r.nanos, 1000))
}

// TimesThousandths prices n thousandths of a unit at a per-unit rate in
// USD (milliseconds at a rate per second), rounding up once to a whole
// micro-dollar.
func (r Rate) TimesThousandths(n int64) Micros {
	if n <= 0 || r.nanos <= 0 {
		return 0
	}
	return Micros(ceilDiv(n*r.nanos, 1_000_000))
}

// String shows the rate as a decimal in USD.
func (r Rate) String() string {
	return strings.TrimRight(strings.TrimRight(fmt.Sprintf("%d.%09d", r.nanos/1e9, r.nanos%1e9), "0"), ".")
}

// FromUSD converts a decimal dollar amount such as "0.25" into micro-dollars.
func FromUSD(s string) (Micros, error) {
	r, err := ParseRate(s)
	if err != nil {
		return 0, err
	}
	if r.nanos%1000 != 0 {
		return 0, fmt.Errorf("money: %q is finer than a micro-dollar", s)
	}
	return Micros(r.nanos / 1000), nil
}

// String formats the amount as dollars with six decimals, e.g. "$0.001234".
func (m Micros) String() string {
	s := m.USD()
	if s[0] == '-' {
		return "-$" + s[1:]
	}
	return "$" + s
}

// USD is the amount as a decimal number of dollars with six decimals and
// no currency sign, e.g. "2.000500" or "-0.250000": exact, for wires
// where a float would round (FromUSD reads it back).
func (m Micros) USD() string {
	sign := ""
	v := int64(m)
	if v < 0 {
		sign = "-"
		if v == math.MinInt64 {
			return "-9223372036854.775808"
		}
		v = -v
	}
	return fmt.Sprintf("%s%d.%06d", sign, v/1_000_000, v%1_000_000)
}

func ceilDiv(a, b int64) int64 {
	if a <= 0 {
		return 0
	}
	return (a + b - 1) / b
}
