package app_test

import (
	"encoding/json"
	"testing"

	"github.com/commonly/runtime/shared/llm/llmtest"
	"github.com/commonly/runtime/shared/runs"
)

// Issue 9, item 2: a model call that timed out or failed after the
// request was sent may have been billed. It is on the run as an
// estimated step (prompt tokens from the request, priced), so the run's
// cost and the day's see it; the refund follows the rule.
func TestBilledFailedCallIsAnEstimatedStep(t *testing.T) {
	cases := []struct {
		name       string
		env        map[string]string
		steps      []llmtest.Step
		completion bool // the output cap is assumed (no answer arrived)
		refunded   bool
	}{
		{"timed out on the first call", map[string]string{"LLM_TIMEOUT": "300ms"}, []llmtest.Step{llmtest.Hang()}, true, true},
		{"5xx on the first call", nil, []llmtest.Step{llmtest.ServerError(502)}, false, true},
		{"timed out after an answer", map[string]string{"LLM_TIMEOUT": "300ms"},
			[]llmtest.Step{llmtest.Calls(llmtest.Call("commonly_read_memory", `{}`)), llmtest.Hang()}, true, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := newStackWith(t, c.env, c.steps...)
			s.install(t, `{"userId":"user-1","podId":"pod-1","agentName":"scout"}`)
			run := s.turn(t, "a question that is long enough to be counted")
			if run.Status != runs.StatusFailed || run.ErrorKind != runs.ErrLLM || run.Refunded != c.refunded {
				t.Fatalf("run = %s %s refunded=%v %q", run.Status, run.ErrorKind, run.Refunded, run.ErrorMessage)
			}
			if len(run.Steps) != len(c.steps) {
				t.Fatalf("%d steps for %d calls: the failed call is not recorded", len(run.Steps), len(c.steps))
			}
			last := run.Steps[len(run.Steps)-1]
			if !last.Estimated || last.PromptTokens <= 0 || last.CachedPromptTokens != 0 || last.CostMicros <= 0 {
				t.Fatalf("failed call's step = %+v, want an estimated, priced step", last)
			}
			if (last.CompletionTokens > 0) != c.completion {
				t.Errorf("completion tokens %d, want the output cap assumed: %v", last.CompletionTokens, c.completion)
			}
			var cost int64
			for _, st := range run.Steps {
				cost += int64(st.CostMicros)
			}
			if int64(run.Cost.ModelMicros) != cost || run.CostMicros != run.Cost.Total() {
				t.Errorf("run cost %+v does not add up its steps (%d)", run.Cost, cost)
			}
			// The day's cost is the alarm function's ledger over the runs
			// stream (shared/ledger, tested there): what it counts is the
			// stored run's cost, estimate included.
			var stored runs.Run
			if g := s.call(t, apiEvent("GET", "/v1/runs/"+run.RunID, "user-1", false, "", nil)); json.Unmarshal([]byte(g.Body), &stored) != nil || stored.CostMicros != run.CostMicros {
				t.Errorf("stored run cost %d, want %d: the estimate must reach the record the ledger counts", stored.CostMicros, run.CostMicros)
			}
		})
	}
}
