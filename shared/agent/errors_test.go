package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/commonly/runtime/shared/llm"
	"github.com/commonly/runtime/shared/runs"
	"github.com/commonly/runtime/shared/tools"
)

func TestModelErrors(t *testing.T) {
	long := strings.Repeat("overloaded ", 200)
	callErr := func(status int, msg string) error {
		return &llm.CallError{Kind: llm.ErrCall, Status: status, Message: msg}
	}
	cases := []struct {
		name   string
		script []reply
		kind   runs.ErrorKind
		msg    string
		refund bool
	}{
		{
			name:   "guardrail",
			script: []reply{fail(&llm.CallError{Kind: llm.ErrGuardrail, Status: 400, Message: "Violated guardrail policy: secret rule"})},
			kind:   runs.ErrGuardrailBlocked, msg: msgGuardrail,
		},
		{
			name:   "guardrail wrapped",
			script: []reply{fail(fmt.Errorf("complete: %w", llm.ErrGuardrail))},
			kind:   runs.ErrGuardrailBlocked, msg: msgGuardrail,
		},
		{
			name:   "content filter finish",
			script: []reply{{resp: &llm.Response{Message: llm.Message{Content: "partial"}, FinishReason: "content_filter"}}},
			kind:   runs.ErrGuardrailBlocked, msg: msgGuardrail,
		},
		{
			name:   "5xx on the first call is refunded",
			script: []reply{fail(callErr(503, "overloaded"))},
			kind:   runs.ErrLLM, msg: "llm: call failed: status 503: overloaded", refund: true,
		},
		{
			name:   "transport failure on the first call is refunded",
			script: []reply{fail(callErr(0, "connection refused"))},
			kind:   runs.ErrLLM, msg: "llm: call failed: connection refused", refund: true,
		},
		{
			name:   "429 is not refunded",
			script: []reply{fail(callErr(429, "rate limited"))},
			kind:   runs.ErrLLM, msg: "status 429: rate limited",
		},
		{
			name:   "400 is not refunded",
			script: []reply{fail(callErr(400, "bad request"))},
			kind:   runs.ErrLLM, msg: "status 400",
		},
		{
			name:   "5xx after model output is not refunded",
			script: []reply{calls(call("c1", "echo", `{}`)), fail(callErr(500, "boom"))},
			kind:   runs.ErrLLM, msg: "status 500: boom",
		},
		{
			name:   "message is truncated",
			script: []reply{fail(callErr(500, long))},
			kind:   runs.ErrLLM, msg: "status 500: overloaded overloaded", refund: true,
		},
		{
			name:   "error outside the client's kinds",
			script: []reply{fail(errors.New("weird"))},
			kind:   runs.ErrLLM, msg: msgModelFailed,
		},
		{
			name:   "no response",
			script: []reply{{}},
			kind:   runs.ErrLLM, msg: msgModelFailed,
		},
		{
			name:   "empty answer",
			script: []reply{answer("  \n")},
			kind:   runs.ErrLLM, msg: `empty answer (finish reason "stop")`,
		},
		{
			name:   "abnormal finish",
			script: []reply{{resp: &llm.Response{Message: llm.Message{Content: "cut"}, FinishReason: "insufficient_system_resource"}}},
			kind:   runs.ErrLLM, msg: `ended abnormally (finish reason "insufficient_system_resource")`,
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := newHarness(t, c.script...)
			h.withTools(&fakeTool{name: "echo"})
			out := h.run(context.Background())
			r := h.r()
			wantEnd(t, r, runs.StatusFailed, c.kind)
			if kindOf(t, out) != c.kind || h.refunded(out) != c.refund {
				t.Fatalf("outcome kind %q refund %v, want %q %v", kindOf(t, out), h.refunded(out), c.kind, c.refund)
			}
			if !strings.Contains(r.ErrorMessage, c.msg) || len(r.ErrorMessage) > runs.MaxErrorMessage {
				t.Fatalf("errorMessage (%d bytes) %q, want it to contain %q", len(r.ErrorMessage), r.ErrorMessage, c.msg)
			}
			if strings.Contains(r.ErrorMessage, "secret rule") {
				t.Fatal("guardrail detail stored on the run")
			}
			if r.FinalMessage != "" || len(h.poster.posts) != 0 {
				t.Fatalf("failed turn posted %q", r.FinalMessage)
			}
		})
	}
}

func TestLengthFinishKeepsTheAnswer(t *testing.T) {
	r := answer("a long answer cut at the cap")
	r.resp.FinishReason = "length"
	h := newHarness(t, r)
	h.run(context.Background())
	wantEnd(t, h.r(), runs.StatusSucceeded, "")
	if h.r().Steps[0].FinishReason != "length" || len(h.poster.posts) != 1 {
		t.Fatalf("step %+v posts %d", h.r().Steps[0], len(h.poster.posts))
	}
}

func TestCancelledContextInterrupts(t *testing.T) {
	t.Run("before the turn", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		h := newHarness(t)
		out := h.run(ctx)
		wantEnd(t, h.r(), runs.StatusInterrupted, runs.ErrInterrupted)
		if h.model.calls != 0 || h.refunded(out) || !errors.Is(out.Err, context.Canceled) {
			t.Fatalf("model calls %d outcome %+v", h.model.calls, out)
		}
	})
	t.Run("during a model call", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		h := newHarness(t, reply{do: func(callCtx context.Context) (*llm.Response, error) {
			cancel()
			<-callCtx.Done()
			// The client reports a dead connection as a transport error;
			// on a cancelled turn it is an interruption, not refunded.
			return nil, &llm.CallError{Kind: llm.ErrCall, Message: "context canceled"}
		}})
		out := h.run(ctx)
		wantEnd(t, h.r(), runs.StatusInterrupted, runs.ErrInterrupted)
		if h.refunded(out) {
			t.Fatal("interruption refunded")
		}
	})
	t.Run("during a tool call", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		h := newHarness(t, calls(call("c1", "slow", `{}`), call("c2", "slow", `{}`)))
		slow := &fakeTool{name: "slow", fn: func(ctx context.Context, _ json.RawMessage) tools.Result {
			cancel()
			<-ctx.Done()
			return tools.Result{Err: ctx.Err()}
		}}
		h.withTools(slow)
		h.run(ctx)
		wantEnd(t, h.r(), runs.StatusInterrupted, runs.ErrInterrupted)
		if slow.calls != 1 || h.model.calls != 1 {
			t.Fatalf("tool calls %d model calls %d after cancellation", slow.calls, h.model.calls)
		}
	})
	t.Run("caller deadline", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 0)
		defer cancel()
		h := newHarness(t)
		h.run(ctx)
		wantEnd(t, h.r(), runs.StatusInterrupted, runs.ErrInterrupted)
	})
}

func TestPanicsEndTheRunFailed(t *testing.T) {
	t.Run("tool", func(t *testing.T) {
		h := newHarness(t, calls(call("c1", "boom", `{}`)))
		h.withTools(&fakeTool{name: "boom", fn: func(context.Context, json.RawMessage) tools.Result {
			panic(errors.New("tool bug"))
		}})
		out := h.run(context.Background())
		wantEnd(t, h.r(), runs.StatusFailed, runs.ErrUnknown)
		if kindOf(t, out) != runs.ErrUnknown || h.r().ErrorMessage != msgInternal {
			t.Fatalf("outcome %+v message %q", out, h.r().ErrorMessage)
		}
		if !strings.Contains(h.logs.String(), "turn panicked") {
			t.Fatal("panic not logged")
		}
	})
	t.Run("model", func(t *testing.T) {
		h := newHarness(t, reply{do: func(context.Context) (*llm.Response, error) { panic("client bug") }})
		h.run(context.Background())
		wantEnd(t, h.r(), runs.StatusFailed, runs.ErrUnknown)
	})
	t.Run("poster", func(t *testing.T) {
		h := newHarness(t, answer("hi"))
		h.loop.cfg.Poster = posterFunc(func(context.Context) error { panic("poster bug") })
		h.run(context.Background())
		wantEnd(t, h.r(), runs.StatusFailed, runs.ErrUnknown)
	})
}

func TestMisconfiguredLoop(t *testing.T) {
	cases := []struct {
		name   string
		mutate func(c *Config)
		want   string
	}{
		{"no model", func(c *Config) { c.Model = nil }, "no model client"},
		{"no pricer", func(c *Config) { c.Pricer = nil }, "no pricer"},
		{"no poster", func(c *Config) { c.Poster = nil }, "no poster"},
		{"no model name", func(c *Config) { c.ModelName = "" }, "no model name"},
		{"negative output cap", func(c *Config) { c.MaxOutputTokens = -1 }, "negative"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := newHarness(t)
			c.mutate(&h.loop.cfg)
			// New refuses it: main refuses to start, so no turn runs with it.
			if _, err := New(h.loop.cfg); err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("New = %v", err)
			}
		})
	}
	if _, err := New(newHarness(t).loop.cfg); err != nil {
		t.Fatalf("valid loop: %v", err)
	}
}

func TestRunRefusesFinalOrMissingRuns(t *testing.T) {
	h := newHarness(t)
	h.r().Status = runs.StatusSucceeded
	before := *h.r()
	out := h.run(context.Background())
	if kindOf(t, out) != runs.ErrConfig || h.model.calls != 0 {
		t.Fatalf("outcome %+v", out)
	}
	if h.r().Status != runs.StatusSucceeded || h.r().CompletedAt != before.CompletedAt {
		t.Fatal("a final run was changed")
	}
	if out := h.loop.Run(context.Background(), TurnInput{}); kindOf(t, out) != runs.ErrConfig {
		t.Fatalf("nil run: %+v", out)
	}
}
