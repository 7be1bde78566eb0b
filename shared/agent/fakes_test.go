package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/commonly/runtime/shared/llm"
	"github.com/commonly/runtime/shared/money"
	"github.com/commonly/runtime/shared/runs"
	"github.com/commonly/runtime/shared/tools"
)

// clock is a manual clock; the fakes advance it to stand for time spent.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock() *clock {
	return &clock{t: time.Date(2026, 5, 4, 12, 0, 0, 0, time.UTC)}
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// reply is one scripted answer of the model.
type reply struct {
	resp    *llm.Response
	err     error
	advance time.Duration // clock time the call takes
	do      func(ctx context.Context) (*llm.Response, error)
}

var defaultUsage = llm.Usage{PromptTokens: 100, CachedPromptTokens: 20, CompletionTokens: 10}

func answer(text string) reply {
	return reply{resp: &llm.Response{
		Message:      llm.Message{Role: llm.RoleAssistant, Content: text},
		FinishReason: "stop", Usage: defaultUsage, Model: "test-model",
	}}
}

func calls(cs ...llm.ToolCall) reply {
	return reply{resp: &llm.Response{
		Message:      llm.Message{Role: llm.RoleAssistant, ToolCalls: cs},
		FinishReason: "tool_calls", Usage: defaultUsage, Model: "test-model",
	}}
}

func call(id, name, args string) llm.ToolCall {
	return llm.ToolCall{ID: id, Name: name, Arguments: args}
}

func (r reply) usage(prompt, cached, completion int64) reply {
	r.resp.Usage = llm.Usage{PromptTokens: prompt, CachedPromptTokens: cached, CompletionTokens: completion}
	return r
}

func (r reply) after(d time.Duration) reply { r.advance = d; return r }

func fail(err error) reply { return reply{err: err} }

// scriptedModel plays replies in order and records what it was asked.
type scriptedModel struct {
	t         testing.TB
	clock     *clock
	script    []reply
	reqs      []llm.Request
	deadlines []time.Duration // time left on each call's context
	calls     int
}

func (m *scriptedModel) Complete(ctx context.Context, req llm.Request) (*llm.Response, error) {
	m.calls++
	// Copy: the loop appends to its history after the call.
	req.Messages = slices.Clone(req.Messages)
	m.reqs = append(m.reqs, req)
	left := time.Duration(-1)
	if dl, ok := ctx.Deadline(); ok {
		left = time.Until(dl)
	}
	m.deadlines = append(m.deadlines, left)
	if len(m.script) == 0 {
		m.t.Errorf("unexpected model call %d", m.calls)
		return nil, errors.New("script exhausted")
	}
	r := m.script[0]
	m.script = m.script[1:]
	m.clock.Advance(r.advance)
	if r.do != nil {
		return r.do(ctx)
	}
	if r.resp != nil {
		resp := *r.resp
		resp.CallID = fmt.Sprintf("litellm-%d", m.calls)
		return &resp, r.err
	}
	return nil, r.err
}

// fakeTool records its calls; by default it echoes its arguments.
type fakeTool struct {
	name  string
	fn    func(ctx context.Context, args json.RawMessage) tools.Result
	args  []string
	envs  []tools.Env
	calls int
}

func (f *fakeTool) Spec() llm.ToolSpec {
	return llm.ToolSpec{Name: f.name, Description: "a test tool", Parameters: map[string]any{"type": "object"}}
}

func (f *fakeTool) Call(ctx context.Context, env tools.Env, args json.RawMessage) tools.Result {
	f.calls++
	f.args = append(f.args, string(args))
	f.envs = append(f.envs, env)
	if f.fn != nil {
		return f.fn(ctx, args)
	}
	return tools.Result{Output: map[string]any{"echo": json.RawMessage(args)}}
}

// toolset offers its tools, as the gate's *tools.Set does.
type toolset []*fakeTool

func (s toolset) Specs() []llm.ToolSpec {
	var specs []llm.ToolSpec
	for _, t := range s {
		specs = append(specs, t.Spec())
	}
	return specs
}

func (s toolset) Lookup(name string) (tools.Tool, bool) {
	for _, t := range s {
		if t.name == name {
			return t, true
		}
	}
	return nil, false
}

// fakePricer has integer rates in micro-dollars: uncached prompt 3 a
// token, cached prompt 1, completion 5; search 1000 a query; sandbox 2 a
// millisecond. The worst case is every prompt token uncached and every
// output token used, unless worst is set.
type fakePricer struct {
	worst                                     func(prompt, maxOut int64) money.Micros
	worstErr, modelErr, searchErr, sandboxErr error

	worstCalls [][2]int64
	modelCalls []struct {
		model string
		at    time.Time
	}
	providers []string
}

func (p *fakePricer) ModelCostParts(model string, at time.Time, u llm.Usage) (runs.Cost, error) {
	p.modelCalls = append(p.modelCalls, struct {
		model string
		at    time.Time
	}{model, at})
	if p.modelErr != nil {
		return runs.Cost{}, p.modelErr
	}
	c := runs.Cost{
		InputMicros:       money.Micros((u.PromptTokens - u.CachedPromptTokens) * 3),
		CachedInputMicros: money.Micros(u.CachedPromptTokens),
		OutputMicros:      money.Micros(u.CompletionTokens * 5),
	}
	c.ModelMicros = c.InputMicros + c.CachedInputMicros + c.OutputMicros
	return c, nil
}

func (p *fakePricer) WorstCase(model string, prompt, maxOut int64) (money.Micros, error) {
	p.worstCalls = append(p.worstCalls, [2]int64{prompt, maxOut})
	if p.worstErr != nil {
		return 0, p.worstErr
	}
	if p.worst != nil {
		return p.worst(prompt, maxOut), nil
	}
	return money.Micros(prompt*3 + maxOut*5), nil
}

func (p *fakePricer) SearchCost(provider string, queries int64) (money.Micros, error) {
	p.providers = append(p.providers, provider)
	if p.searchErr != nil {
		return 0, p.searchErr
	}
	return money.Micros(queries * 1000), nil
}

func (p *fakePricer) SandboxCost(provider string, millis int64) (money.Micros, error) {
	p.providers = append(p.providers, provider)
	if p.sandboxErr != nil {
		return 0, p.sandboxErr
	}
	return money.Micros(millis * 2), nil
}

func (p *fakePricer) Version() string { return "test-prices-v1" }

type post struct {
	env     tools.Env
	content string
}

type fakePoster struct {
	err   error
	posts []post
}

func (p *fakePoster) Post(ctx context.Context, env tools.Env, content string) error {
	p.posts = append(p.posts, post{env, content})
	return p.err
}

// harness wires a Loop to the fakes for one turn.
type harness struct {
	clock       *clock
	model       *scriptedModel
	pricer      *fakePricer
	poster      *fakePoster
	loop        *Loop
	turn        TurnInput
	checkpoints []runs.Run // snapshots
	logs        bytes.Buffer
}

func newHarness(t testing.TB, script ...reply) *harness {
	h := &harness{clock: newClock(), pricer: &fakePricer{}, poster: &fakePoster{}}
	h.model = &scriptedModel{t: t, clock: h.clock, script: script}
	loop, err := New(Config{
		Model: h.model, Pricer: h.pricer, Poster: h.poster,
		ModelName: "deepseek-v4-flash", SearchProvider: "brave", SandboxProvider: "e2b",
		Now:    h.clock.Now,
		Logger: slog.New(slog.NewJSONHandler(&h.logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
	})
	if err != nil {
		t.Fatal(err)
	}
	h.loop = loop
	started := h.clock.Now()
	h.turn = TurnInput{
		Run: &runs.Run{
			RunID: "run_1", InstallID: "inst_1", UserID: "u_9", PodID: "pod_1",
			Status: runs.StatusRunning, CreatedAt: started, StartedAt: &started,
		},
		System:  "You are a helpful agent.",
		Message: "What is 6 times 7?",
		Env:     tools.Env{RunID: "run_1", UserID: "u_9", InstallID: "inst_1", PodID: "pod_1", AgentName: "helper"},
		Checkpoint: func(ctx context.Context, r *runs.Run) error {
			snap := *r
			snap.Steps = slices.Clone(r.Steps)
			h.checkpoints = append(h.checkpoints, snap)
			return nil
		},
	}
	return h
}

func (h *harness) withTools(ts ...*fakeTool) *harness {
	h.turn.Tools = toolset(ts)
	return h
}

func (h *harness) run(ctx context.Context) TurnResult { return h.loop.Run(ctx, h.turn) }

func (h *harness) r() *runs.Run { return h.turn.Run }

// wantEnd checks a run's final status and kind, and that it is complete.
func wantEnd(t *testing.T, r *runs.Run, status runs.Status, kind runs.ErrorKind) {
	t.Helper()
	if r.Status != status || r.ErrorKind != kind {
		t.Fatalf("run ended %s/%q (%q), want %s/%q", r.Status, r.ErrorKind, r.ErrorMessage, status, kind)
	}
	if r.CompletedAt == nil {
		t.Fatal("CompletedAt not set")
	}
	if r.CostMicros != r.Cost.Total() {
		t.Fatalf("CostMicros %d != Cost.Total() %d", r.CostMicros, r.Cost.Total())
	}
	if status != runs.StatusSucceeded && r.ErrorMessage == "" {
		t.Fatal("failed run without errorMessage")
	}
}

// kindOf is the errorKind of a TurnResult's error.
func kindOf(t *testing.T, out TurnResult) runs.ErrorKind {
	t.Helper()
	if out.Err == nil {
		return ""
	}
	var e *Error
	if !errors.As(out.Err, &e) {
		t.Fatalf("TurnResult.Err %T is not an *Error", out.Err)
	}
	return e.Kind
}

// refunded is what the run's writer decides for the outcome: the refund
// rule, runs.RefundDue, on the loop's infrastructure verdict.
func (h *harness) refunded(out TurnResult) bool { return h.r().RefundDue(out.Infrastructure) }
