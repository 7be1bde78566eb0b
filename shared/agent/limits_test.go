package agent

import (
	"testing"
	"time"

	"github.com/commonly/runtime/shared/money"
)

func TestDefaultLimits(t *testing.T) {
	want := Limits{MaxModelCalls: 10, MaxTokens: 50_000, MaxWall: 170 * time.Second, MaxCost: 250_000, RepeatLimit: 3, PostGrace: 5 * time.Second}
	if got := DefaultLimits(); got != want {
		t.Fatalf("DefaultLimits = %+v", got)
	}
	// Only the zero fields take defaults.
	got := Limits{MaxModelCalls: 2, MaxCost: -1}.withDefaults()
	if got.MaxModelCalls != 2 || got.MaxCost != DefaultMaxCost || got.MaxTokens != DefaultMaxTokens {
		t.Fatalf("withDefaults = %+v", got)
	}
}

func TestParseMaxCost(t *testing.T) {
	cases := []struct {
		in   string
		want money.Micros
		ok   bool
	}{
		{"", 250_000, true},
		{"  ", 250_000, true},
		{"0.25", 250_000, true},
		{"1", 1_000_000, true},
		{"0.000001", 1, true},
		{"0.0000001", 0, false}, // finer than a micro-dollar
		{"0", 0, false},
		{"-0.25", 0, false},
		{"$0.25", 0, false},
		{"abc", 0, false},
	}
	for _, c := range cases {
		got, err := ParseMaxCost(c.in)
		if (err == nil) != c.ok || got != c.want {
			t.Errorf("ParseMaxCost(%q) = %d, %v; want %d ok=%v", c.in, got, err, c.want, c.ok)
		}
	}
}
