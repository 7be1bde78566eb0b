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

func TestRefundDue(t *testing.T) {
	answered := Step{Index: 0, CompletionTokens: 12}
	estimated := Step{Index: 0, PromptTokens: 900, Estimated: true}
	cases := []struct {
		name  string
		steps []Step
		infra bool
		want  bool
	}{
		{"infrastructure failure before any model call", nil, true, true},
		{"infrastructure failure after a call that never answered", []Step{estimated}, true, true},
		{"infrastructure failure after the model answered", []Step{answered}, true, false},
		{"infrastructure failure after two calls, the first answered", []Step{answered, estimated}, true, false},
		{"not an infrastructure failure, nothing ran", nil, false, false},
		{"not an infrastructure failure after an answer", []Step{answered}, false, false},
	}
	for _, c := range cases {
		r := &Run{Steps: c.steps}
		if got := r.RefundDue(c.infra); got != c.want {
			t.Errorf("%s: RefundDue(%v) = %v, want %v", c.name, c.infra, got, c.want)
		}
	}
}
