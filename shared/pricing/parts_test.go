package pricing

import (
	"testing"
	"time"

	"github.com/commonly/runtime/shared/llm"
)

// The model's cost splits into its three parts exactly: the parts sum to
// ModelCost, each priced at its own rate.
func TestModelCostPartsSumToModelCost(t *testing.T) {
	tab := mustLoad(t)
	at := time.Date(2026, 10, 3, 12, 0, 0, 0, time.UTC) // a Saturday: off-peak
	for _, u := range []llm.Usage{
		{PromptTokens: 1_000_000, CachedPromptTokens: 400_000, CompletionTokens: 250_000},
		{PromptTokens: 7, CachedPromptTokens: 3, CompletionTokens: 1},
		{PromptTokens: 0, CompletionTokens: 0},
	} {
		whole, err := tab.ModelCost("deepseek-v4-flash", at, u)
		if err != nil {
			t.Fatal(err)
		}
		c, err := tab.ModelCostParts("deepseek-v4-flash", at, u)
		if err != nil {
			t.Fatal(err)
		}
		if c.ModelMicros != whole || c.InputMicros+c.CachedInputMicros+c.OutputMicros != whole {
			t.Errorf("%+v: parts %+v, ModelCost %d", u, c, whole)
		}
	}
	c, _ := tab.ModelCostParts("deepseek-v4-flash", at, llm.Usage{PromptTokens: 1_000_000, CachedPromptTokens: 400_000, CompletionTokens: 250_000})
	// Off-peak: 600k uncached at $0.22/M, 400k cached at $0.007/M, 250k out at $0.66/M.
	if c.InputMicros != 132_000 || c.CachedInputMicros != 2_800 || c.OutputMicros != 165_000 {
		t.Errorf("parts %+v, want input 132000, cached 2800, output 165000", c)
	}
}
