package runs

import (
	"strings"
	"testing"
	"time"
)

func TestEnd(t *testing.T) {
	r := &Run{Status: StatusRunning}
	at := time.Date(2026, 12, 2, 13, 0, 0, 0, time.FixedZone("CET", 3600))
	r.End(StatusFailed, ErrLLM, strings.Repeat("x", MaxErrorMessage+10), at)
	if r.Status != StatusFailed || r.ErrorKind != ErrLLM || len(r.ErrorMessage) > MaxErrorMessage || r.CompletedAt == nil ||
		!r.CompletedAt.Equal(at) || r.CompletedAt.Location() != time.UTC || !r.Status.Final() {
		t.Fatalf("run = %+v", r)
	}
	r.End(StatusSucceeded, "", "", at)
	if r.ErrorKind != "" || r.ErrorMessage != "" {
		t.Fatalf("success keeps an error: %+v", r)
	}
}

func TestAddCost(t *testing.T) {
	r := &Run{Cost: Cost{ModelMicros: 5, PriceVersion: "v1"}, CostMicros: 5}
	r.AddCost(Cost{ModelMicros: 10, SandboxMicros: 20, SearchMicros: 30, PriceVersion: "v2"})
	r.AddCost(Cost{SandboxMicros: 1})
	want := Cost{ModelMicros: 15, SandboxMicros: 21, SearchMicros: 30, PriceVersion: "v1"}
	if r.Cost != want || r.CostMicros != 66 {
		t.Fatalf("cost %+v, costMicros %d", r.Cost, r.CostMicros)
	}
	// Adding nothing brings CostMicros back to the sum of the parts.
	r.CostMicros = 0
	r.AddCost(Cost{})
	if r.CostMicros != 66 {
		t.Fatalf("costMicros %d after a zero add", r.CostMicros)
	}
}
