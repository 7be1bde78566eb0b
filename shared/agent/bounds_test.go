package agent

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/commonly/runtime/shared/llm"
	"github.com/commonly/runtime/shared/money"
	"github.com/commonly/runtime/shared/runs"
	"github.com/commonly/runtime/shared/tools"
)

// Each bound ends the turn with its own errorKind and message, at the
// check before the model or tool call that would break it.
func TestBounds(t *testing.T) {
	// A model that always calls a tool, with fresh arguments each time so
	// the repeat breaker stays out of the way.
	toolCalls := func(n int) []reply {
		var rs []reply
		for i := range n {
			rs = append(rs, calls(call("c", "work", `{"i":`+string(rune('0'+i))+`}`)))
		}
		return rs
	}
	cases := []struct {
		name       string
		limits     Limits
		script     []reply
		toolTakes  time.Duration
		toolUsage  tools.Usage
		worst      func(prompt, maxOut int64) money.Micros
		kind       runs.ErrorKind
		msg        string
		modelCalls int
		toolRuns   int
	}{
		{
			name: "model calls", limits: Limits{MaxModelCalls: 3}, script: toolCalls(3),
			kind: runs.ErrTurnCap, msg: "limit of 3 model calls", modelCalls: 3, toolRuns: 3,
		},
		{
			// 110 tokens a call: 220 after two, which is the cap, so no third call.
			name: "tokens at the cap before a model call", limits: Limits{MaxTokens: 220}, script: toolCalls(2),
			kind: runs.ErrTokenCap, msg: "used 220 tokens, its limit is 220", modelCalls: 2, toolRuns: 2,
		},
		{
			name: "tokens past the cap before a tool call", limits: Limits{MaxTokens: 300},
			script: []reply{calls(call("c", "work", `{}`)).usage(290, 0, 20)},
			kind:   runs.ErrTokenCap, msg: "used 310 tokens, its limit is 300", modelCalls: 1, toolRuns: 0,
		},
		{
			name: "wall clock before a model call", limits: Limits{MaxWall: time.Minute},
			script: toolCalls(1), toolTakes: time.Minute,
			kind: runs.ErrTimeout, msg: "1m0s wall-clock limit", modelCalls: 1, toolRuns: 1,
		},
		{
			name: "wall clock before a tool call", limits: Limits{MaxWall: time.Minute},
			script: []reply{calls(call("c", "work", `{}`)).after(61 * time.Second)},
			kind:   runs.ErrTimeout, msg: "wall-clock limit", modelCalls: 1, toolRuns: 0,
		},
		{
			// Each call costs 80*3+20+10*5 = 310; the worst case is 1000.
			// Before call 2: 310+1000 <= 1310 runs (the bound is inclusive).
			// Before call 3: 620+1000 > 1310 stops, before the call.
			name: "money before a model call", limits: Limits{MaxCost: 1310}, script: toolCalls(2),
			worst: func(int64, int64) money.Micros { return 1000 },
			kind:  runs.ErrBudget, msg: "could cost up to $0.001000, which would take the turn's cost of $0.000620 past its limit of $0.001310",
			modelCalls: 2, toolRuns: 2,
		},
		{
			name: "money before the first call", limits: Limits{MaxCost: 999},
			worst: func(int64, int64) money.Micros { return 1000 },
			kind:  runs.ErrBudget, msg: "past its limit of $0.000999", modelCalls: 0, toolRuns: 0,
		},
		{
			// The first tool's sandbox time costs 2*1000; the second is not run.
			name: "money past the cap before a tool call", limits: Limits{MaxCost: 2000},
			worst:     func(int64, int64) money.Micros { return 1 },
			script:    []reply{calls(call("c1", "work", `{"a":1}`), call("c2", "work", `{"a":2}`))},
			toolUsage: tools.Usage{SandboxMillis: 1000},
			kind:      runs.ErrBudget, msg: "turn's cost of $0.002310 is past its limit of $0.002000", modelCalls: 1, toolRuns: 1,
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := newHarness(t, c.script...)
			h.loop.cfg.Limits = c.limits.withDefaults()
			h.pricer.worst = c.worst
			work := &fakeTool{name: "work", fn: func(context.Context, json.RawMessage) tools.Result {
				h.clock.Advance(c.toolTakes)
				return tools.Result{Output: "done", Usage: c.toolUsage}
			}}
			h.withTools(work)
			out := h.run(context.Background())

			wantEnd(t, h.r(), runs.StatusFailed, c.kind)
			if kindOf(t, out) != c.kind || h.refunded(out) {
				t.Fatalf("outcome %+v", out)
			}
			if !strings.Contains(h.r().ErrorMessage, c.msg) {
				t.Fatalf("errorMessage %q, want it to contain %q", h.r().ErrorMessage, c.msg)
			}
			if h.model.calls != c.modelCalls || work.calls != c.toolRuns {
				t.Fatalf("model calls %d tool runs %d, want %d and %d", h.model.calls, work.calls, c.modelCalls, c.toolRuns)
			}
			if len(h.model.script) != 0 {
				t.Fatalf("%d scripted replies unused", len(h.model.script))
			}
		})
	}
}

// The money check prices the prompt about to be sent: its estimate grows
// with the history, and the output cap is the configured one.
func TestWorstCaseUsesThePromptEstimate(t *testing.T) {
	h := newHarness(t, calls(call("c1", "work", `{"q":"abc"}`)), answer("done"))
	work := &fakeTool{name: "work"}
	h.withTools(work)
	h.run(context.Background())

	if len(h.pricer.worstCalls) != 2 {
		t.Fatalf("worst case priced %d times", len(h.pricer.worstCalls))
	}
	req := h.model.reqs[1]
	want := EstimateTokens(messageBytes(req.Messages) + specBytes(req.Tools))
	if got := h.pricer.worstCalls[1]; got != [2]int64{want, DefaultMaxOutputTokens} {
		t.Fatalf("worst case for %v, want prompt %d and %d output", got, want, DefaultMaxOutputTokens)
	}
	if h.pricer.worstCalls[1][0] <= h.pricer.worstCalls[0][0] {
		t.Fatalf("estimate did not grow with the history: %v", h.pricer.worstCalls)
	}
}

// The model call that runs out the clock is cut by its context deadline,
// and the turn ends as a timeout, not an llm_error or an interruption.
func TestModelCallCutByTheWallClock(t *testing.T) {
	h := newHarness(t, reply{do: func(ctx context.Context) (*llm.Response, error) {
		<-ctx.Done()
		return nil, &llm.CallError{Kind: llm.ErrCall, Message: "context deadline exceeded"}
	}})
	h.loop.cfg.Limits = Limits{MaxWall: 30 * time.Millisecond}.withDefaults()
	h.loop.cfg.Now = time.Now // the deadline is real time here
	h.r().StartedAt = nil
	out := h.run(context.Background())
	wantEnd(t, h.r(), runs.StatusFailed, runs.ErrTimeout)
	if h.refunded(out) || h.model.calls != 1 {
		t.Fatalf("refund %v after %d model calls", h.refunded(out), h.model.calls)
	}
}

func TestToolCallCutByTheWallClockIsReportedThenTimesOut(t *testing.T) {
	h := newHarness(t, calls(call("c1", "slow", `{}`)))
	h.loop.cfg.Limits = Limits{MaxWall: 30 * time.Millisecond}.withDefaults()
	h.loop.cfg.Now = time.Now
	h.r().StartedAt = nil
	slow := &fakeTool{name: "slow", fn: func(ctx context.Context, _ json.RawMessage) tools.Result {
		<-ctx.Done()
		return tools.Result{Err: ctx.Err()}
	}}
	h.withTools(slow)
	h.run(context.Background())
	wantEnd(t, h.r(), runs.StatusFailed, runs.ErrTimeout)
	if slow.calls != 1 {
		t.Fatalf("tool ran %d times", slow.calls)
	}
	if rec := h.r().Steps[0].ToolCalls[0]; rec.Error != "tool slow timed out" {
		t.Fatalf("record %+v", rec)
	}
}

func TestBudgetChecks(t *testing.T) {
	start := newClock().Now()
	b := newBudget(Limits{MaxModelCalls: 10, MaxTokens: 50_000, MaxWall: 170 * time.Second, MaxCost: 250_000}, start)
	at := func(d time.Duration) time.Time { return start.Add(d) }
	cases := []struct {
		name        string
		now         time.Time
		s           spent
		model, tool runs.ErrorKind
	}{
		{"fresh", start, spent{}, "", ""},
		{"last call allowed", at(169 * time.Second), spent{calls: 9, tokens: 49_999, cost: 249_999}, "", ""},
		{"wall clock reached", at(170 * time.Second), spent{}, runs.ErrTimeout, runs.ErrTimeout},
		{"call cap reached, tools still run", start, spent{calls: 10}, runs.ErrTurnCap, ""},
		{"token cap reached, tools still run", start, spent{tokens: 50_000}, runs.ErrTokenCap, ""},
		{"token cap passed", start, spent{tokens: 50_001}, runs.ErrTokenCap, runs.ErrTokenCap},
		{"money cap reached", start, spent{cost: 250_000}, "", ""},
		{"money cap passed", start, spent{cost: 250_001}, "", runs.ErrBudget},
		{"time checked first", at(time.Hour), spent{calls: 99, tokens: 99_999}, runs.ErrTimeout, runs.ErrTimeout},
	}
	kind := func(e *Error) runs.ErrorKind {
		if e == nil {
			return ""
		}
		return e.Kind
	}
	for _, c := range cases {
		if got := kind(b.beforeModel(c.now, c.s)); got != c.model {
			t.Errorf("%s: beforeModel = %q, want %q", c.name, got, c.model)
		}
		if got := kind(b.beforeTool(c.now, c.s)); got != c.tool {
			t.Errorf("%s: beforeTool = %q, want %q", c.name, got, c.tool)
		}
	}

	costs := []struct {
		cost, worst money.Micros
		stop        bool
	}{
		{0, 250_000, false},
		{0, 250_001, true},
		{249_000, 1000, false},
		{249_000, 1001, true},
		{250_000, 0, false},
	}
	for _, c := range costs {
		if got := b.affordable(spent{cost: c.cost}, c.worst) != nil; got != c.stop {
			t.Errorf("affordable(spent %d, worst %d) stops = %v, want %v", c.cost, c.worst, got, c.stop)
		}
	}
	if got := b.remaining(at(200 * time.Second)); got != 0 {
		t.Errorf("remaining past the deadline = %v", got)
	}
	if got := b.remaining(at(100 * time.Second)); got != 70*time.Second {
		t.Errorf("remaining = %v", got)
	}
}

func TestErrorWrapsItsCause(t *testing.T) {
	cause := errors.New("x")
	e := &Error{Kind: runs.ErrLLM, Message: "m", Err: cause}
	if !errors.Is(e, cause) || e.Error() != "llm_error: m" {
		t.Fatalf("%v", e)
	}
}

func TestWallClockRunsFromTheRunsStart(t *testing.T) {
	cases := []struct {
		name      string
		startedAt func(now time.Time) *time.Time
		want      time.Duration
	}{
		{"claimed earlier", func(now time.Time) *time.Time { s := now.Add(-100 * time.Second); return &s }, 70 * time.Second},
		{"no start", func(time.Time) *time.Time { return nil }, 170 * time.Second},
		{"start ahead of our clock", func(now time.Time) *time.Time { s := now.Add(time.Hour); return &s }, 170 * time.Second},
	}
	for _, c := range cases {
		h := newHarness(t, answer("hi"))
		h.r().StartedAt = c.startedAt(h.clock.Now())
		h.run(context.Background())
		if got := h.model.deadlines[0]; got > c.want || got < c.want-5*time.Second {
			t.Errorf("%s: deadline %v, want ~%v", c.name, got, c.want)
		}
	}
	h := newHarness(t)
	s := h.clock.Now().Add(-171 * time.Second)
	h.r().StartedAt = &s
	h.run(context.Background())
	wantEnd(t, h.r(), runs.StatusFailed, runs.ErrTimeout)
}
