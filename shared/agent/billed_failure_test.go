package agent

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/commonly/runtime/shared/llm"
	"github.com/commonly/runtime/shared/money"
	"github.com/commonly/runtime/shared/runs"
)

// billedFailure is an abnormal 200 answer as the client returns it: the
// decoded response, with its usage, together with the error.
func billedFailure(kind error, reason string, prompt, cached, completion int64) reply {
	return reply{
		resp: &llm.Response{
			Message:      llm.Message{Role: llm.RoleAssistant, Content: "partial"},
			FinishReason: reason, Model: "test-model",
			Usage: llm.Usage{PromptTokens: prompt, CachedPromptTokens: cached, CompletionTokens: completion},
		},
		err: &llm.CallError{Kind: kind, Status: 200, Message: "abnormal finish_reason " + reason, Billed: true},
	}
}

// A call the client failed but returned a response for was billed: its
// tokens and price are on the run, as a step, however the turn ends.
func TestFailedCallWithResponseIsCharged(t *testing.T) {
	cases := []struct {
		name   string
		script []reply
		kind   runs.ErrorKind
	}{
		{
			name:   "capacity on the first call",
			script: []reply{billedFailure(llm.ErrCall, "insufficient_system_resource", 1000, 200, 40)},
			kind:   runs.ErrLLM,
		},
		{
			name:   "content filter on the first call",
			script: []reply{billedFailure(llm.ErrGuardrail, "content_filter", 1000, 200, 40)},
			kind:   runs.ErrGuardrailBlocked,
		},
		{
			name: "unknown finish after a tool call",
			script: []reply{
				calls(call("c1", "echo", `{}`)).usage(100, 20, 10),
				billedFailure(llm.ErrCall, "eos", 1000, 200, 40),
			},
			kind: runs.ErrLLM,
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := newHarness(t, c.script...)
			h.withTools(&fakeTool{name: "echo"})
			out := h.run(context.Background())
			r := h.r()
			wantEnd(t, r, runs.StatusFailed, c.kind)
			if kindOf(t, out) != c.kind || h.refunded(out) {
				t.Fatalf("outcome kind %q refund %v", kindOf(t, out), h.refunded(out))
			}
			if len(r.Steps) != len(c.script) {
				t.Fatalf("%d steps recorded for %d billed calls", len(r.Steps), len(c.script))
			}
			// The failed call: 800 uncached at 3, 200 cached at 1, 40 out at 5.
			failed := money.Micros(800*3 + 200 + 40*5)
			last := r.Steps[len(r.Steps)-1]
			want := runs.Step{
				Index: len(r.Steps) - 1, Model: "test-model", CallID: last.CallID,
				PromptTokens: 1000, CachedPromptTokens: 200, CompletionTokens: 40,
				FinishReason: knownFinish(c.script[len(c.script)-1].resp.FinishReason), CostMicros: failed,
			}
			if last.CallID == "" || !reflect.DeepEqual(last, want) {
				t.Fatalf("failed call's step = %+v\nwant %+v", last, want)
			}
			var cost money.Micros
			var tokens runs.Tokens
			for _, s := range r.Steps {
				cost += s.CostMicros
				tokens.Add(s.PromptTokens, s.CachedPromptTokens, s.CompletionTokens)
			}
			if r.Tokens != tokens || r.Cost.ModelMicros != cost || r.CostMicros != cost {
				t.Fatalf("run tokens %+v cost %+v (%d), want %+v and %d", r.Tokens, r.Cost, r.CostMicros, tokens, cost)
			}
			if r.Tokens.Total < 1040 || cost < failed {
				t.Fatalf("the failed call is not on the run: tokens %+v cost %d", r.Tokens, cost)
			}
		})
	}
}

// A failed call that cannot be priced still ends the turn with its own
// error; its tokens stay on the run, so it can be repriced.
func TestFailedCallWithResponseUnpriced(t *testing.T) {
	h := newHarness(t, billedFailure(llm.ErrCall, "length", 1000, 200, 40))
	h.pricer.modelErr = errors.New("no price for model")
	out := h.run(context.Background())
	r := h.r()
	wantEnd(t, r, runs.StatusFailed, runs.ErrLLM)
	if kindOf(t, out) != runs.ErrLLM || h.refunded(out) {
		t.Fatalf("outcome %+v", out)
	}
	if len(r.Steps) != 1 || r.Tokens.Total != 1040 || r.CostMicros != 0 {
		t.Fatalf("steps %+v tokens %+v cost %d", r.Steps, r.Tokens, r.CostMicros)
	}
	if !strings.Contains(h.logs.String(), "no price for model") {
		t.Fatal("the pricing failure was not logged")
	}
}

// A call whose answer never arrived after the request was sent is an
// estimated step: the prompt from the request, uncached; no output when
// the proxy answered with an error status, the output cap when nothing
// answered. A call the client knows was never billed is not recorded.
func TestFailedCallWithoutResponseIsEstimated(t *testing.T) {
	cases := []struct {
		name       string
		err        error
		recorded   bool
		completion int64
	}{
		{"timeout", &llm.CallError{Kind: llm.ErrCall, Message: "no answer", Billed: true}, true, DefaultMaxOutputTokens},
		{"5xx", &llm.CallError{Kind: llm.ErrCall, Status: 503, Message: "proxy error", Billed: true}, true, 0},
		{"malformed 200", &llm.CallError{Kind: llm.ErrCall, Status: 200, Message: "malformed", Billed: true}, true, DefaultMaxOutputTokens},
		{"guardrail refusal", &llm.CallError{Kind: llm.ErrGuardrail, Status: 400, Message: "refused", Billed: true}, true, 0},
		{"refused dial", &llm.CallError{Kind: llm.ErrCall, Message: "dial"}, false, 0},
		{"400 before generation", &llm.CallError{Kind: llm.ErrCall, Status: 400, Message: "bad request"}, false, 0},
		{"an error the client does not classify", errors.New("weird"), true, DefaultMaxOutputTokens},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := newHarness(t, fail(c.err))
			out := h.run(context.Background())
			r := h.r()
			if out.Err == nil || r.Status != runs.StatusFailed {
				t.Fatalf("outcome %+v", out)
			}
			if !c.recorded {
				if len(r.Steps) != 0 || r.CostMicros != 0 {
					t.Fatalf("a call never billed is on the run: %+v", r.Steps)
				}
				return
			}
			prompt := EstimateTokens(messageBytes(h.model.reqs[0].Messages) + specBytes(h.model.reqs[0].Tools))
			want := runs.Step{Index: 0, Model: "deepseek-v4-flash", PromptTokens: prompt, CompletionTokens: c.completion,
				CostMicros: money.Micros(prompt*3 + c.completion*5), Estimated: true}
			if len(r.Steps) != 1 || !reflect.DeepEqual(r.Steps[0], want) {
				t.Fatalf("steps %+v, want %+v", r.Steps, want)
			}
			if r.CostMicros != want.CostMicros || r.Tokens.Total != prompt+c.completion {
				t.Fatalf("run cost %d tokens %+v", r.CostMicros, r.Tokens)
			}
			// Nothing answered: the estimate does not stop a refund.
			if r.ModelAnswered() {
				t.Fatal("an estimated step counts as an answer")
			}
		})
	}
}
