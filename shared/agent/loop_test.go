package agent

import (
	"encoding/json"

	"context"
	"errors"
	"github.com/commonly/runtime/shared/tools"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/commonly/runtime/shared/llm"
	"github.com/commonly/runtime/shared/runs"
)

func TestFinalAnswerSucceedsAndIsPosted(t *testing.T) {
	h := newHarness(t, answer("42").after(1500*time.Millisecond))
	echo := &fakeTool{name: "echo"}
	h.withTools(echo)

	out := h.run(context.Background())

	if out.Err != nil || h.refunded(out) || out.PostErr != nil {
		t.Fatalf("outcome = %+v, want success", out)
	}
	r := h.r()
	wantEnd(t, r, runs.StatusSucceeded, "")
	if r.FinalMessage != "42" || !r.PostedToPod {
		t.Fatalf("final %q posted %v", r.FinalMessage, r.PostedToPod)
	}
	wantEnv := h.turn.Env
	wantEnv.IdempotencyKey = r.RunID + "/answer"
	if len(h.poster.posts) != 1 || h.poster.posts[0].content != "42" || h.poster.posts[0].env != wantEnv {
		t.Fatalf("posts = %+v", h.poster.posts)
	}
	if want := h.clock.Now(); !r.CompletedAt.Equal(want) {
		t.Fatalf("CompletedAt %v, want %v", r.CompletedAt, want)
	}

	req := h.model.reqs[0]
	if req.Model != "deepseek-v4-flash" || req.User != "u_9" || req.MaxTokens != DefaultMaxOutputTokens {
		t.Fatalf("request model %q user %q maxTokens %d", req.Model, req.User, req.MaxTokens)
	}
	if !reflect.DeepEqual(req.Tools, []llm.ToolSpec{echo.Spec()}) {
		t.Fatalf("tools offered = %+v", req.Tools)
	}
	wantMsgs := []llm.Message{
		{Role: llm.RoleSystem, Content: "You are a helpful agent."},
		{Role: llm.RoleUser, Content: "What is 6 times 7?"},
	}
	if !reflect.DeepEqual(req.Messages, wantMsgs) {
		t.Fatalf("messages = %+v", req.Messages)
	}

	if len(r.Steps) != 1 {
		t.Fatalf("steps = %d", len(r.Steps))
	}
	s := r.Steps[0]
	want := runs.Step{Index: 0, Model: "test-model", CallID: "litellm-1", PromptTokens: 100, CachedPromptTokens: 20,
		CompletionTokens: 10, FinishReason: "stop", ElapsedMs: 1500, CostMicros: 80*3 + 20 + 10*5}
	if !reflect.DeepEqual(s, want) {
		t.Fatalf("step = %+v\nwant   %+v", s, want)
	}
	// No checkpoint: the final state is the caller's one write, which
	// the answer's journal entry rides on.
	if len(h.checkpoints) != 0 {
		t.Fatalf("checkpointed %+v for a one-step turn", h.checkpoints)
	}
}

func TestNoSystemPromptSendsOnlyTheUserMessage(t *testing.T) {
	h := newHarness(t, answer("hi"))
	h.turn.System = ""
	h.run(context.Background())
	if got := h.model.reqs[0].Messages; len(got) != 1 || got[0].Role != llm.RoleUser {
		t.Fatalf("messages = %+v", got)
	}
}

func TestMaxOutputTokensIsSent(t *testing.T) {
	h := newHarness(t, answer("hi"))
	h.loop.cfg.MaxOutputTokens = 512
	h.run(context.Background())
	if got := h.model.reqs[0].MaxTokens; got != 512 {
		t.Fatalf("MaxTokens = %d", got)
	}
	if got := h.pricer.worstCalls[0][1]; got != 512 {
		t.Fatalf("worst case priced for %d output tokens", got)
	}
}

// The assistant message goes back unchanged (reasoning included) and is
// followed by exactly one tool message per call id, in order, whether the
// call ran, was refused or had bad arguments.
func TestToolRoundTripEchoesHistory(t *testing.T) {
	first := calls(
		call("c1", "echo", `{"x":1}`),
		call("c2", "delete_pod", `{}`),
		call("c3", "echo", `{"x":`),
	)
	first.resp.Message.ReasoningContent = "I should echo."
	first.resp.Message.Content = "Let me check."
	h := newHarness(t, first, answer("done"))
	echo := &fakeTool{name: "echo"}
	h.withTools(echo)

	out := h.run(context.Background())
	if out.Err != nil {
		t.Fatalf("err = %v", out.Err)
	}
	if echo.calls != 1 || echo.args[0] != `{"x":1}` || echo.envs[0] != h.turn.Env {
		t.Fatalf("echo called %d times with %q", echo.calls, echo.args)
	}
	msgs := h.model.reqs[1].Messages
	if len(msgs) != 6 {
		t.Fatalf("second request has %d messages: %+v", len(msgs), msgs)
	}
	if !reflect.DeepEqual(msgs[2], first.resp.Message) {
		t.Fatalf("assistant message not echoed unchanged:\n got %+v\nwant %+v", msgs[2], first.resp.Message)
	}
	wantTool := []llm.Message{
		{Role: llm.RoleTool, ToolCallID: "c1", Content: `{"echo":{"x":1},"ok":true}`},
		{Role: llm.RoleTool, ToolCallID: "c2", Content: `{"ok":false,"error":"tool delete_pod is not available"}`},
		{Role: llm.RoleTool, ToolCallID: "c3", Content: `{"ok":false,"error":"invalid arguments for tool echo: unexpected end of JSON input"}`},
	}
	if !reflect.DeepEqual(msgs[3:], wantTool) {
		t.Fatalf("tool messages:\n got %+v\nwant %+v", msgs[3:], wantTool)
	}

	got := h.r().Steps[0].ToolCalls
	if len(got) != 3 || !got[0].OK || got[1].OK || got[2].OK {
		t.Fatalf("recorded calls = %+v", got)
	}
	if got[1].Name != "delete_pod" || got[1].Error != "tool delete_pod is not available" || got[2].Args != `{"x":` {
		t.Fatalf("recorded calls = %+v", got)
	}
}

// A checkpoint before each model call after the first; the final state
// is the caller's one write, which the final answer's entry rides on.
func TestCheckpointOncePerStepNotForTheFinalState(t *testing.T) {
	h := newHarness(t,
		calls(call("c1", "echo", `{"n":1}`)),
		calls(call("c2", "echo", `{"n":2}`)),
		answer("done"),
	)
	h.withTools(&fakeTool{name: "echo"})
	h.run(context.Background())

	wantEnd(t, h.r(), runs.StatusSucceeded, "")
	if len(h.checkpoints) != 2 {
		t.Fatalf("checkpoints = %d, want 2 (before calls 2 and 3)", len(h.checkpoints))
	}
	for i, cp := range h.checkpoints[:2] {
		if cp.Status != runs.StatusRunning || len(cp.Steps) != i+1 || len(cp.Steps[i].ToolCalls) != 1 {
			t.Fatalf("checkpoint %d: status %s, %d steps", i, cp.Status, len(cp.Steps))
		}
		if cp.CostMicros != cp.Cost.Total() || cp.Tokens.Total != int64(110*(i+1)) {
			t.Fatalf("checkpoint %d: cost %d/%d tokens %d", i, cp.CostMicros, cp.Cost.Total(), cp.Tokens.Total)
		}
	}
}

// The turn never runs ahead of its record: a checkpoint that cannot be
// written stops it before the next model call, its run left open for
// another attempt to resume once the store answers.
func TestCheckpointFailureLeavesTheRun(t *testing.T) {
	h := newHarness(t, calls(call("c1", "echo", `{}`)), answer("done"))
	h.withTools(&fakeTool{name: "echo"})
	n := 0
	h.turn.Checkpoint = func(context.Context, *runs.Run) error { n++; return errors.New("throttled") }
	out := h.run(context.Background())
	if !out.Leave || h.r().Status != runs.StatusRunning || len(h.model.reqs) != 1 {
		t.Fatalf("outcome %+v, status %s, %d model calls", out, h.r().Status, len(h.model.reqs))
	}
	if n != 1 || !strings.Contains(h.logs.String(), "checkpoint failed") {
		t.Fatalf("checkpoint calls %d, logs %s", n, h.logs.String())
	}
}

func TestNoToolsetOffersNothing(t *testing.T) {
	h := newHarness(t, calls(call("c1", "echo", `{}`)), answer("done"))
	h.turn.Tools = nil
	h.run(context.Background())
	wantEnd(t, h.r(), runs.StatusSucceeded, "")
	if h.model.reqs[0].Tools != nil {
		t.Fatalf("tools offered: %+v", h.model.reqs[0].Tools)
	}
	if got := h.model.reqs[1].Messages[3].Content; got != `{"ok":false,"error":"tool echo is not available"}` {
		t.Fatalf("tool message %s", got)
	}
}

func TestEachCallGetsTheRemainingWallTimeAsDeadline(t *testing.T) {
	var toolLeft time.Duration
	slow := &fakeTool{name: "slow"}
	h := newHarness(t, calls(call("c1", "slow", `{}`)).after(40*time.Second), answer("done"))
	slow.fn = func(ctx context.Context, _ json.RawMessage) tools.Result {
		dl, _ := ctx.Deadline()
		toolLeft = time.Until(dl)
		h.clock.Advance(60 * time.Second)
		return tools.Result{}
	}
	h.withTools(slow)
	h.run(context.Background())

	near := func(got, want time.Duration) bool { return got <= want && got > want-5*time.Second }
	if d := h.model.deadlines; !near(d[0], 170*time.Second) || !near(d[1], 70*time.Second) {
		t.Fatalf("model deadlines %v, want ~170s then ~70s", d)
	}
	if !near(toolLeft, 130*time.Second) {
		t.Fatalf("tool deadline %v, want ~130s", toolLeft)
	}
}

func TestPostToolAnswerIsNotPostedTwice(t *testing.T) {
	poster := &fakeTool{name: "commonly_post", fn: func(context.Context, json.RawMessage) tools.Result {
		return tools.Result{Output: map[string]any{"messageId": "m1"}, Posted: true}
	}}
	for _, final := range []string{"I posted the answer.", ""} {
		h := newHarness(t, calls(call("c1", "commonly_post", `{"text":"42"}`)), answer(final))
		h.withTools(poster)
		out := h.run(context.Background())
		wantEnd(t, h.r(), runs.StatusSucceeded, "")
		if out.Err != nil || len(h.poster.posts) != 0 || !h.r().PostedToPod || h.r().FinalMessage != final {
			t.Fatalf("final %q: posts %d postedToPod %v message %q", final, len(h.poster.posts), h.r().PostedToPod, h.r().FinalMessage)
		}
	}
}

func TestPostFailureStillSucceeds(t *testing.T) {
	h := newHarness(t, answer("42"))
	h.poster.err = errors.New("pod service unavailable")
	out := h.run(context.Background())

	r := h.r()
	wantEnd(t, r, runs.StatusSucceeded, "")
	if out.Err != nil || out.PostErr == nil || h.refunded(out) {
		t.Fatalf("outcome = %+v", out)
	}
	if r.PostedToPod || r.FinalMessage != "42" || r.ErrorMessage != "" {
		t.Fatalf("postedToPod %v final %q errorMessage %q", r.PostedToPod, r.FinalMessage, r.ErrorMessage)
	}
	if !strings.Contains(h.logs.String(), "posting the final answer failed") {
		t.Fatalf("post failure not logged: %s", h.logs.String())
	}
}

// The post gets PostGrace even when the model's answer used up the wall
// time: the answer is paid for already.
func TestPostHasGraceAfterTheWallClock(t *testing.T) {
	h := newHarness(t, answer("42").after(200*time.Second))
	var left time.Duration
	h.loop.cfg.Poster = posterFunc(func(ctx context.Context) error {
		dl, _ := ctx.Deadline()
		left = time.Until(dl)
		return ctx.Err()
	})
	out := h.run(context.Background())
	if out.PostErr != nil || !h.r().PostedToPod {
		t.Fatalf("post failed: %v", out.PostErr)
	}
	if left <= 0 || left > DefaultPostGrace {
		t.Fatalf("post deadline %v, want within the %v grace", left, DefaultPostGrace)
	}
}

func TestLogsCarryIdsNotMessageText(t *testing.T) {
	secret := "SECRET-WORDS"
	first := calls(call("c1", "echo", `{"q":"`+secret+`-args"}`))
	first.resp.Message.ReasoningContent = secret + "-reasoning"
	h := newHarness(t, first, answer(secret+"-answer"))
	h.turn.System = secret + "-system"
	h.turn.Message = secret + "-user"
	h.withTools(&fakeTool{name: "echo"})
	h.run(context.Background())

	logs := h.logs.String()
	if strings.Contains(logs, secret) {
		t.Fatalf("message text in logs:\n%s", logs)
	}
	for _, want := range []string{`"runId":"run_1"`, `"userId":"u_9"`, `"tool":"echo"`, `"step":0`, `"elapsedMs"`, `"msg":"turn finished"`} {
		if !strings.Contains(logs, want) {
			t.Fatalf("logs lack %s:\n%s", want, logs)
		}
	}
}

// posterFunc adapts a function to Poster.
type posterFunc func(ctx context.Context) error

func (f posterFunc) Post(ctx context.Context, _ tools.Env, _ string) error { return f(ctx) }

// A turn that names its model (an install's choice) calls it and is
// priced under it; the loop's model is the default.
func TestTurnModelOverridesTheLoopModel(t *testing.T) {
	h := newHarness(t, answer("hi"))
	h.turn.Model = "install-model"
	h.run(context.Background())
	wantEnd(t, h.r(), runs.StatusSucceeded, "")
	if got := h.model.reqs[0].Model; got != "install-model" {
		t.Errorf("called %q", got)
	}
	if len(h.pricer.modelCalls) != 1 || h.pricer.modelCalls[0].model != "install-model" {
		t.Errorf("priced %+v", h.pricer.modelCalls)
	}

	h = newHarness(t, answer("hi"))
	h.run(context.Background())
	if got := h.model.reqs[0].Model; got != "deepseek-v4-flash" {
		t.Errorf("without a turn model: called %q", got)
	}
}

func TestNewFillsDefaults(t *testing.T) {
	h := newHarness(t)
	cfg := h.loop.cfg
	cfg.Now, cfg.Logger, cfg.MaxOutputTokens, cfg.Limits = nil, nil, 0, Limits{}
	l, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if l.cfg.Now == nil || l.cfg.Logger == nil || l.cfg.MaxOutputTokens != DefaultMaxOutputTokens || l.cfg.Limits != DefaultLimits() {
		t.Errorf("defaults: %+v", l.cfg)
	}
}
