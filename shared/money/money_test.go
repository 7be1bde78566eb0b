package money

import (
	"math"
	"testing"
)

func TestPerMillionTokens(t *testing.T) {
	cases := []struct {
		rate   string
		tokens int64
		want   Micros
	}{
		{"0.66", 1_000_000, 660_000},      // $0.66 for a million tokens
		{"0.66", 1, 1},                    // 0.66 µ$ rounds up to 1
		{"0.66", 100, 66},                 // exact
		{"0.007", 1024, 8},                // 7.168 µ$ rounds up
		{"0.44", 176, 78},                 // 77.44 rounds up
		{"3.96", 50_000_000, 198_000_000}, // the largest turn the loop allows, at the dearest rate, does not overflow
		{"0", 1000, 0},
		{"1.5", 0, 0},
		{"1.5", -5, 0},
	}
	for _, c := range cases {
		if got := PerMillionTokens(MustRate(c.rate), c.tokens); got != c.want {
			t.Errorf("PerMillionTokens(%s, %d) = %d, want %d", c.rate, c.tokens, got, c.want)
		}
	}
}

func TestRateTimes(t *testing.T) {
	cases := []struct {
		rate string
		n    int64
		want Micros
	}{
		{"0.005", 1, 5000},  // a search query at $0.005
		{"0.000028", 1, 28}, // one sandbox second at $0.000028
		{"0.000028", 35_714, 999_992},
		{"0.0000001", 1, 1}, // 0.1 µ$ rounds up
		{"0.5", 0, 0},
	}
	for _, c := range cases {
		if got := MustRate(c.rate).Times(c.n); got != c.want {
			t.Errorf("%s × %d = %d, want %d", c.rate, c.n, got, c.want)
		}
	}
}

func TestRateTimesThousandths(t *testing.T) {
	cases := []struct {
		rate string
		n    int64
		want Micros
	}{
		{"0.000028", 1000, 28},     // one sandbox second at $0.000028
		{"0.000028", 1, 1},         // 0.028 µ$ rounds up
		{"0.000028", 35_714, 1000}, // 999.992 µ$ rounds up
		{"0.000028", 3_600_000, 100_800},
		{"0.5", 0, 0},
		{"0", 1000, 0},
	}
	for _, c := range cases {
		if got := MustRate(c.rate).TimesThousandths(c.n); got != c.want {
			t.Errorf("%s × %d/1000 = %d, want %d", c.rate, c.n, got, c.want)
		}
	}
	// One rounding up is the same as rounding Times up a second time.
	for _, rate := range []string{"0.000028", "0.000014", "0.05", "0.000000001", "1.000000007"} {
		r := MustRate(rate)
		for n := int64(0); n < 5000; n += 7 {
			if got, want := r.TimesThousandths(n), Micros(ceilDiv(int64(r.Times(n)), 1000)); got != want {
				t.Fatalf("%s × %d/1000 = %d, want %d", rate, n, got, want)
			}
		}
	}
}

func TestParseRateAndFromUSD(t *testing.T) {
	if _, err := ParseRate("-1"); err == nil {
		t.Error("negative rate accepted")
	}
	if _, err := ParseRate("0.0000000001"); err == nil {
		t.Error("rate finer than 9 decimals accepted")
	}
	if _, err := ParseRate("abc"); err == nil {
		t.Error("non-number accepted")
	}
	cases := map[string]Micros{"0.25": 250_000, "2": 2_000_000, "0.000001": 1, "0": 0}
	for in, want := range cases {
		if got, err := FromUSD(in); err != nil || got != want {
			t.Errorf("FromUSD(%s) = %d, %v", in, got, err)
		}
	}
	if _, err := FromUSD("0.0000001"); err == nil {
		t.Error("sub-micro amount accepted")
	}
}

func TestString(t *testing.T) {
	cases := map[Micros]string{0: "$0.000000", 1: "$0.000001", 1_234_567: "$1.234567", -250_000: "-$0.250000"}
	for m, want := range cases {
		if got := m.String(); got != want {
			t.Errorf("%d.String() = %q, want %q", int64(m), got, want)
		}
	}
	usd := map[Micros]string{0: "0.000000", 2_000_500: "2.000500", -250_000: "-0.250000", math.MinInt64: "-9223372036854.775808"}
	for m, want := range usd {
		if got := m.USD(); got != want {
			t.Errorf("%d.USD() = %q, want %q", int64(m), got, want)
		}
		if back, err := FromUSD(m.USD()); m >= 0 && (err != nil || back != m) {
			t.Errorf("FromUSD(%q) = %d, %v; want %d", m.USD(), back, err, int64(m))
		}
	}
	if got := Micros(math.MinInt64).String(); got != "-$9223372036854.775808" {
		t.Errorf("MinInt64.String() = %q", got)
	}
	if got := MustRate("0.0028").String(); got != "0.0028" {
		t.Errorf("rate string %q", got)
	}
}
