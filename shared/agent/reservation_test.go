package agent

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/commonly/runtime/shared/llm"
	"github.com/commonly/runtime/shared/money"
	"github.com/commonly/runtime/shared/runs"
	"github.com/commonly/runtime/shared/tools"
)

// meteredTool is a fakeTool that reports priced usage as the search and
// sandbox tools do.
type meteredTool struct {
	*fakeTool
	outstanding, next tools.Usage
}

func (m *meteredTool) Outstanding() tools.Usage { return m.outstanding }
func (m *meteredTool) NextCall() tools.Usage    { return m.next }

type meteredSet struct{ ts []tools.Tool }

func (s meteredSet) Specs() (out []llm.ToolSpec) {
	for _, t := range s.ts {
		out = append(out, t.Spec())
	}
	return out
}

func (s meteredSet) Lookup(name string) (tools.Tool, bool) {
	for _, t := range s.ts {
		if t.Spec().Name == name {
			return t, true
		}
	}
	return nil, false
}

// lastWorst is the last worst case the loop priced: (prompt, maxOut).
func (h *harness) lastWorst() (int64, int64) {
	w := h.pricer.worstCalls[len(h.pricer.worstCalls)-1]
	return w[0], w[1]
}

// Each call's max_tokens is the largest whose worst case, with the
// prompt's strict bound, fits in what the reservation has left; the
// second call gets what the first left.
func TestReservationSizesEachCall(t *testing.T) {
	h := newHarness(t,
		calls(call("c1", "work", `{}`)).usage(500, 0, 300),
		answer("42").usage(700, 0, 10),
	).withTools(&fakeTool{name: "work"})
	const reserved = 8_000
	h.r().ReservedMicros = reserved
	out := h.run(context.Background())
	if out.Err != nil {
		t.Fatalf("turn: %v", out.Err)
	}
	if len(h.model.reqs) != 2 {
		t.Fatalf("%d calls", len(h.model.reqs))
	}
	spentBefore := []money.Micros{0, 500*3 + 300*5}
	for i, req := range h.model.reqs {
		// The loop priced the bound then the fitted cap last for each call;
		// recompute the bound from the request itself.
		prompt := messageBytes(req.Messages) + specBytes(req.Tools) + templateTokensPerPrompt +
			templateTokensPerMessage*int64(len(req.Messages)) + templateTokensPerTool*int64(len(req.Tools))
		if prompt < messageBytes(req.Messages) {
			t.Fatal("the bound is below the text's bytes")
		}
		left := reserved - spentBefore[i]
		n := req.MaxTokens
		worst := money.Micros(prompt*3 + n*5)
		next := money.Micros(prompt*3 + (n+1)*5)
		if n >= DefaultMaxOutputTokens || worst > left || next <= left {
			t.Errorf("call %d: max_tokens %d, worst %d, left %d: not the largest cap that fits", i, n, worst, left)
		}
	}
	if h.r().CostMicros > reserved {
		t.Errorf("cost %d past the reservation", h.r().CostMicros)
	}
}

// A reservation that cannot pay for a call with MinCallOutputTokens of
// answer ends the turn budget_cap before the call.
func TestReservationTooSmallForACallEndsTheTurn(t *testing.T) {
	h := newHarness(t)
	h.r().ReservedMicros = 1_000 // the prompt's bound alone is ~300 tokens, 900 µ$
	out := h.run(context.Background())
	wantEnd(t, h.r(), runs.StatusFailed, runs.ErrBudget)
	if kindOf(t, out) != runs.ErrBudget || h.model.calls != 0 || !strings.Contains(h.r().ErrorMessage, "reservation") {
		t.Fatalf("calls %d, message %q", h.model.calls, h.r().ErrorMessage)
	}
	if h.refunded(out) {
		t.Error("a bound is not refunded")
	}
}

// A failed call whose answer never arrived is priced at most at the
// fitted cap: within the reservation.
func TestUnansweredCallIsPricedWithinTheReservation(t *testing.T) {
	h := newHarness(t, fail(context.DeadlineExceeded))
	h.r().ReservedMicros = 8_000
	h.run(context.Background())
	if len(h.r().Steps) != 1 || !h.r().Steps[0].Estimated || h.r().CostMicros > 8_000 {
		t.Fatalf("steps %+v cost %d", h.r().Steps, h.r().CostMicros)
	}
	if got := h.r().Steps[0].CompletionTokens; got != h.model.reqs[0].MaxTokens || got >= DefaultMaxOutputTokens {
		t.Errorf("estimated output %d, the call's cap %d", got, h.model.reqs[0].MaxTokens)
	}
}

// A metered tool whose next call would not fit is not run: the model is
// told, and the turn goes on to answer. Its outstanding usage shrinks
// every later call.
func TestMeteredToolsAreBoundedByTheReservation(t *testing.T) {
	search := &meteredTool{fakeTool: &fakeTool{name: "search"}, next: tools.Usage{SearchQueries: 5}}
	sandbox := &meteredTool{fakeTool: &fakeTool{name: "code"}, outstanding: tools.Usage{SandboxMillis: 500}}
	h := newHarness(t,
		calls(call("c1", "search", `{"q":"x"}`)).usage(100, 0, 20),
		answer("done").usage(600, 0, 20),
	)
	h.turn.Tools = meteredSet{ts: []tools.Tool{search, sandbox}}
	// Room for the calls and the sandbox's outstanding 1,000 µ$, not
	// for a 5,000 µ$ search on top.
	h.r().ReservedMicros = 6_000
	out := h.run(context.Background())
	if out.Err != nil {
		t.Fatalf("turn: %v (%s)", out.Err, h.r().ErrorMessage)
	}
	if search.calls != 0 {
		t.Fatalf("the search ran %d times", search.calls)
	}
	tc := h.r().Steps[0].ToolCalls
	if len(tc) != 1 || tc[0].OK || !strings.Contains(tc[0].Error, "reservation") {
		t.Errorf("tool call %+v", tc)
	}
	var msg struct {
		OK    bool   `json:"ok"`
		Error string `json:"error"`
	}
	_ = json.Unmarshal([]byte(h.model.reqs[1].Messages[len(h.model.reqs[1].Messages)-1].Content), &msg)
	if msg.OK || !strings.Contains(msg.Error, "reservation") {
		t.Errorf("the model was told %+v", msg)
	}
	// The sandbox's outstanding 500 ms (1,000 µ$) was held back from the
	// second call's cap.
	prompt, _ := h.lastWorst()
	n := h.model.reqs[1].MaxTokens
	left := money.Micros(6_000) - h.r().Steps[0].CostMicros - 1_000
	if money.Micros(prompt*3+n*5) > left || money.Micros(prompt*3+(n+1)*5) <= left {
		t.Errorf("second call cap %d with prompt %d does not fit %d exactly", n, prompt, left)
	}
}

// Without a reservation nothing changes: every call asks for the
// configured output cap and the turn's own bound decides.
func TestWithoutAReservationCallsAreNotResized(t *testing.T) {
	h := newHarness(t,
		calls(call("c1", "work", `{}`)).usage(500, 0, 300),
		answer("42").usage(700, 0, 10),
	).withTools(&fakeTool{name: "work"})
	if out := h.run(context.Background()); out.Err != nil {
		t.Fatal(out.Err)
	}
	for i, req := range h.model.reqs {
		if req.MaxTokens != DefaultMaxOutputTokens {
			t.Errorf("call %d: max_tokens %d", i, req.MaxTokens)
		}
	}
	// One worst case a call: the bound is checked, never searched.
	if len(h.pricer.worstCalls) != 2 {
		t.Errorf("%d worst cases priced", len(h.pricer.worstCalls))
	}
}
