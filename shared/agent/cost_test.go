package agent

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/commonly/runtime/shared/llm"
	"github.com/commonly/runtime/shared/money"
	"github.com/commonly/runtime/shared/runs"
	"github.com/commonly/runtime/shared/tools"
)

// Rates of the fake pricer (micro-dollars): uncached prompt 3, cached 1,
// completion 5 a token; search 1000 a query; sandbox 2 a millisecond.
func TestCostIsExact(t *testing.T) {
	h := newHarness(t,
		calls(call("c1", "search", `{"q":"a"}`), call("c2", "run", `{"code":"1"}`)).usage(1200, 1024, 80).after(2*time.Second),
		answer("done").usage(1500, 1280, 35).after(time.Second),
	)
	search := &fakeTool{name: "search", fn: func(context.Context, json.RawMessage) tools.Result {
		return tools.Result{Output: "hits", Usage: tools.Usage{SearchQueries: 3}}
	}}
	run := &fakeTool{name: "run", fn: func(context.Context, json.RawMessage) tools.Result {
		return tools.Result{Output: "1", Usage: tools.Usage{SandboxMillis: 1234}}
	}}
	h.withTools(search, run)
	start := h.clock.Now()
	h.run(context.Background())

	r := h.r()
	wantEnd(t, r, runs.StatusSucceeded, "")
	step0 := money.Micros((1200-1024)*3 + 1024 + 80*5) // 528 + 1024 + 400 = 1952
	step1 := money.Micros((1500-1280)*3 + 1280 + 35*5) // 660 + 1280 + 175 = 2115
	wantCost := runs.Cost{
		ModelMicros:   step0 + step1,
		SearchMicros:  3 * 1000,
		SandboxMicros: 1234 * 2,
		// The model's parts, summed over both calls.
		InputMicros:       (1200-1024)*3 + (1500-1280)*3,
		CachedInputMicros: 1024 + 1280,
		OutputMicros:      80*5 + 35*5,
		PriceVersion:      "test-prices-v1",
	}
	if !reflect.DeepEqual(r.Cost, wantCost) {
		t.Fatalf("cost = %+v\nwant   %+v", r.Cost, wantCost)
	}
	if r.CostMicros != 1952+2115+3000+2468 {
		t.Fatalf("CostMicros = %d", r.CostMicros)
	}
	if r.Steps[0].CostMicros != step0 || r.Steps[1].CostMicros != step1 {
		t.Fatalf("step costs %d %d", r.Steps[0].CostMicros, r.Steps[1].CostMicros)
	}
	wantTokens := runs.Tokens{Prompt: 2700, CachedPrompt: 2304, Completion: 115, Total: 2815}
	if r.Tokens != wantTokens {
		t.Fatalf("tokens = %+v", r.Tokens)
	}
	// Priced under the configured model, at the time each call was made.
	pc := h.pricer.modelCalls
	if len(pc) != 2 || pc[0].model != "deepseek-v4-flash" || !pc[0].at.Equal(start) || !pc[1].at.Equal(start.Add(2*time.Second)) {
		t.Fatalf("model priced as %+v", pc)
	}
	if got := strings.Join(h.pricer.providers, ","); got != "brave,e2b" {
		t.Fatalf("providers priced %s", got)
	}
}

func TestPricingFailureIsAConfigFailure(t *testing.T) {
	boom := errors.New("no price for model")
	cases := []struct {
		name   string
		set    func(p *fakePricer)
		tool   tools.Usage
		refund bool
		tokens int64
	}{
		{"worst case before the first call", func(p *fakePricer) { p.worstErr = boom }, tools.Usage{}, true, 0},
		{"model cost", func(p *fakePricer) { p.modelErr = boom }, tools.Usage{}, false, 110},
		{"search cost", func(p *fakePricer) { p.searchErr = boom }, tools.Usage{SearchQueries: 1}, false, 110},
		{"sandbox cost", func(p *fakePricer) { p.sandboxErr = boom }, tools.Usage{SandboxMillis: 10}, false, 110},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := newHarness(t, calls(call("c1", "work", `{}`)), answer("never"))
			c.set(h.pricer)
			h.withTools(&fakeTool{name: "work", fn: func(context.Context, json.RawMessage) tools.Result {
				return tools.Result{Output: "x", Usage: c.tool}
			}})
			out := h.run(context.Background())
			wantEnd(t, h.r(), runs.StatusFailed, runs.ErrConfig)
			if h.refunded(out) != c.refund || !strings.Contains(h.r().ErrorMessage, "no price for model") {
				t.Fatalf("refund %v message %q", h.refunded(out), h.r().ErrorMessage)
			}
			// The usage stays on the record, so the turn can be repriced.
			if h.r().Tokens.Total != c.tokens {
				t.Fatalf("tokens %d, want %d", h.r().Tokens.Total, c.tokens)
			}
			if len(h.model.script) == 0 {
				t.Fatal("the turn went on after a pricing failure")
			}
		})
	}
}

// A worst case failing after the first call is not refunded: the model
// has already answered.
func TestWorstCaseFailureLaterIsNotRefunded(t *testing.T) {
	h := newHarness(t, calls(call("c1", "work", `{}`)))
	h.withTools(&fakeTool{name: "work"})
	n := 0
	h.pricer.worst = func(int64, int64) money.Micros { return 0 }
	h.loop.cfg.Pricer = &failingWorst{fakePricer: h.pricer, after: 1, n: &n}
	out := h.run(context.Background())
	wantEnd(t, h.r(), runs.StatusFailed, runs.ErrConfig)
	if h.refunded(out) {
		t.Fatal("refunded after model output")
	}
}

type failingWorst struct {
	*fakePricer
	after int
	n     *int
}

func (p *failingWorst) WorstCase(model string, prompt, maxOut int64) (money.Micros, error) {
	*p.n++
	if *p.n > p.after {
		return 0, errors.New("price table gone")
	}
	return p.fakePricer.WorstCase(model, prompt, maxOut)
}

func TestEstimate(t *testing.T) {
	msgs := []llm.Message{
		{Role: "system", Content: "abcd"}, // 6+4
		{Role: "user", Content: "héllo"},  // 4+6 (é is two bytes)
		{Role: "assistant", ReasoningContent: "think", ToolCalls: []llm.ToolCall{{ID: "c1", Name: "f", Arguments: `{}`}}}, // 9+5+2+1+2
		{Role: "tool", ToolCallID: "c1", Content: `{"ok":true}`},                                                          // 4+2+11
	}
	if got := messageBytes(msgs); got != 10+10+19+17 {
		t.Fatalf("messageBytes = %d", got)
	}
	specs := []llm.ToolSpec{{Name: "f", Description: "does", Parameters: map[string]any{"type": "object"}}}
	if got := specBytes(specs); got != 1+4+int64(len(`{"type":"object"}`)) {
		t.Fatalf("specBytes = %d", got)
	}
	for bytes, want := range map[int64]int64{0: 0, 1: 1, 4: 1, 5: 2, 4000: 1000} {
		if got := EstimateTokens(bytes); got != want {
			t.Errorf("EstimateTokens(%d) = %d, want %d", bytes, got, want)
		}
	}
}
