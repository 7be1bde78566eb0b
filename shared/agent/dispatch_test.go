package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/commonly/runtime/shared/runs"
	"github.com/commonly/runtime/shared/tools"
)

// toolMessage runs a turn whose model makes one call then answers, and
// returns the tool message the model was sent and the recorded call.
func toolMessage(t *testing.T, tool *fakeTool, name, args string) (string, runs.ToolCall, *harness) {
	t.Helper()
	h := newHarness(t, calls(call("c1", name, args)), answer("done"))
	h.withTools(tool)
	out := h.run(context.Background())
	if out.Err != nil {
		t.Fatalf("turn failed: %v", out.Err)
	}
	msgs := h.model.reqs[1].Messages
	return msgs[len(msgs)-1].Content, h.r().Steps[0].ToolCalls[0], h
}

func TestGateRefusesToolsNotInTheToolset(t *testing.T) {
	offered := &fakeTool{name: "search"}
	for _, name := range []string{"run_code", "SEARCH", "", "search "} {
		msg, rec, _ := toolMessage(t, offered, name, `{}`)
		want := `{"ok":false,"error":"tool ` + name + ` is not available"}`
		if msg != want || rec.OK || rec.Error == "" {
			t.Errorf("name %q: message %s record %+v, want %s", name, msg, rec, want)
		}
	}
	if offered.calls != 0 {
		t.Fatalf("a tool ran %d times under another name", offered.calls)
	}
}

func TestArgumentsAreValidatedNotGuessed(t *testing.T) {
	cases := []struct {
		args    string
		runs    bool
		gotArgs string // what the tool receives
		errPart string // in the tool message when refused
	}{
		{args: ``, runs: true, gotArgs: `{}`},
		{args: "  \n", runs: true, gotArgs: `{}`},
		{args: `{"q":"go"}`, runs: true, gotArgs: `{"q":"go"}`},
		{args: ` {"q":"go"} `, runs: true, gotArgs: `{"q":"go"}`},
		{args: `{}`, runs: true, gotArgs: `{}`},
		{args: `{"q":`, errPart: "unexpected end of JSON input"},
		{args: `{q:"go"}`, errPart: "invalid character 'q'"},
		{args: `{"a":1} {"b":2}`, errPart: "invalid character '{' after top-level value"},
		{args: `null`, errPart: "arguments must be a JSON object"},
		{args: `["go"]`, errPart: "arguments must be a JSON object"},
		{args: `"go"`, errPart: "arguments must be a JSON object"},
		{args: `42`, errPart: "arguments must be a JSON object"},
	}
	for _, c := range cases {
		tool := &fakeTool{name: "search", fn: func(context.Context, json.RawMessage) tools.Result { return tools.Result{} }}
		msg, rec, _ := toolMessage(t, tool, "search", c.args)
		if c.runs {
			if tool.calls != 1 || tool.args[0] != c.gotArgs || msg != `{"ok":true}` || !rec.OK {
				t.Errorf("args %q: calls %d args %q message %s", c.args, tool.calls, tool.args, msg)
			}
			continue
		}
		prefix := `{"ok":false,"error":"invalid arguments for tool search: `
		if tool.calls != 0 || !strings.HasPrefix(msg, prefix) || !strings.Contains(msg, c.errPart) {
			t.Errorf("args %q: calls %d message %s, want refusal with %q", c.args, tool.calls, msg, c.errPart)
		}
		if rec.OK || !strings.Contains(rec.Error, c.errPart) || rec.Args != c.args {
			t.Errorf("args %q: record %+v", c.args, rec)
		}
	}
}

func TestToolResultsGoBackToTheModel(t *testing.T) {
	type out struct {
		Stdout string `json:"stdout"`
		Exit   int    `json:"exit"`
	}
	cases := []struct {
		name   string
		result tools.Result
		want   string
		ok     bool
	}{
		{"object merged", tools.Result{Output: map[string]any{"hits": []string{"a", "b"}}}, `{"hits":["a","b"],"ok":true}`, true},
		{"struct merged", tools.Result{Output: out{"1 < 2 && 3 > 2", 0}}, `{"exit":0,"ok":true,"stdout":"1 < 2 && 3 > 2"}`, true},
		{"string under result", tools.Result{Output: "plain"}, `{"ok":true,"result":"plain"}`, true},
		{"array under result", tools.Result{Output: []int{1, 2}}, `{"ok":true,"result":[1,2]}`, true},
		{"no output", tools.Result{}, `{"ok":true}`, true},
		{"output cannot claim failure", tools.Result{Output: map[string]any{"ok": false, "n": 1}}, `{"n":1,"ok":true}`, true},
		{"raw json object", tools.Result{Output: json.RawMessage(`{"b":1,"a":2}`)}, `{"a":2,"b":1,"ok":true}`, true},
		{"tool error", tools.Errorf("no results for %q", "x"), `{"ok":false,"error":"no results for \"x\""}`, false},
		{"error wins over output", tools.Result{Output: "partial", Err: errors.New("boom")}, `{"ok":false,"error":"boom"}`, false},
		{"timeout", tools.Result{Err: context.DeadlineExceeded}, `{"ok":false,"error":"tool search timed out"}`, false},
		{"wrapped timeout", tools.Result{Err: errors.Join(errors.New("fetch"), context.DeadlineExceeded)}, `{"ok":false,"error":"tool search timed out"}`, false},
		{"unencodable", tools.Result{Output: map[string]any{"f": func() {}}}, `{"ok":false,"error":"tool search returned output that could not be encoded"}`, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tool := &fakeTool{name: "search", fn: func(context.Context, json.RawMessage) tools.Result { return c.result }}
			msg, rec, h := toolMessage(t, tool, "search", `{"q":"x"}`)
			if msg != c.want {
				t.Fatalf("tool message\n got %s\nwant %s", msg, c.want)
			}
			if rec.OK != c.ok || (c.ok != (rec.Error == "")) {
				t.Fatalf("record %+v", rec)
			}
			wantEnd(t, h.r(), runs.StatusSucceeded, "")
		})
	}
}

func TestToolErrorDoesNotEndTheTurn(t *testing.T) {
	flaky := &fakeTool{name: "search", fn: func(context.Context, json.RawMessage) tools.Result {
		return tools.Errorf("rate limited")
	}}
	h := newHarness(t, calls(call("c1", "search", `{"q":"a"}`)), calls(call("c2", "search", `{"q":"b"}`)), answer("sorry"))
	h.withTools(flaky)
	h.run(context.Background())
	wantEnd(t, h.r(), runs.StatusSucceeded, "")
	if flaky.calls != 2 || h.r().FinalMessage != "sorry" {
		t.Fatalf("calls %d final %q", flaky.calls, h.r().FinalMessage)
	}
}

// detailedError is a tool error that says something else to the log than
// to the model, as an outbound call's failure does.
type detailedError struct{}

func (detailedError) Error() string { return "backend unreachable" }
func (detailedError) LogValue() slog.Value {
	return slog.GroupValue(slog.String("cause", "dial tcp 10.0.0.9:443: connection refused"))
}

func TestToolErrorCauseIsLoggedNotShown(t *testing.T) {
	failing := &fakeTool{name: "pod", fn: func(context.Context, json.RawMessage) tools.Result {
		return tools.Result{Err: fmt.Errorf("pod: %w", detailedError{})}
	}}
	msg, rec, h := toolMessage(t, failing, "pod", `{}`)
	if strings.Contains(msg, "10.0.0.9") || strings.Contains(rec.Error, "10.0.0.9") || !strings.Contains(msg, "backend unreachable") {
		t.Errorf("the model was told %s, the record %q", msg, rec.Error)
	}
	if logs := h.logs.String(); !strings.Contains(logs, `"tool call failed"`) || !strings.Contains(logs, "10.0.0.9") {
		t.Errorf("the cause was not logged: %s", logs)
	}

	// A plain tool error may quote the model's arguments: not logged.
	plain := &fakeTool{name: "pod", fn: func(context.Context, json.RawMessage) tools.Result {
		return tools.Errorf("bad owner %q", "private words")
	}}
	_, _, h = toolMessage(t, plain, "pod", `{}`)
	if strings.Contains(h.logs.String(), "private words") {
		t.Errorf("a plain tool error reached the logs: %s", h.logs.String())
	}
}

func TestToolCallsRunInOrderAndAreRecorded(t *testing.T) {
	var order []string
	mk := func(name string) *fakeTool {
		return &fakeTool{name: name, fn: func(_ context.Context, args json.RawMessage) tools.Result {
			order = append(order, name+string(args))
			return tools.Result{Output: "ok"}
		}}
	}
	h := newHarness(t, calls(call("c1", "b", `{"i":1}`), call("c2", "a", `{"i":2}`), call("c3", "b", `{"i":3}`)), answer("done"))
	h.withTools(mk("a"), mk("b"))
	h.run(context.Background())
	if got := strings.Join(order, ","); got != `b{"i":1},a{"i":2},b{"i":3}` {
		t.Fatalf("order %s", got)
	}
	recs := h.r().Steps[0].ToolCalls
	if len(recs) != 3 || recs[0].ID != "c1" || recs[1].Name != "a" || recs[2].Args != `{"i":3}` {
		t.Fatalf("records %+v", recs)
	}
}

func TestRecordedArgsAreCapped(t *testing.T) {
	long := `{"code":"` + strings.Repeat("é", 3000) + `"}`
	tool := &fakeTool{name: "run_code"}
	_, rec, _ := toolMessage(t, tool, "run_code", long)
	if len(rec.Args) > MaxRecordedArgs || !strings.HasPrefix(long, strings.TrimSuffix(rec.Args, "…")) {
		t.Fatalf("recorded args %d bytes", len(rec.Args))
	}
	if tool.args[0] != long {
		t.Fatal("the tool must get the full arguments")
	}
}

func TestToolElapsedAndCodeRunAreRecorded(t *testing.T) {
	cr := &runs.CodeRun{Language: "python", CodeChars: 9, ExitKind: "ok", DurationMs: 1200, SandboxID: "sbx_1"}
	var h *harness
	tool := &fakeTool{name: "commonly_run_code", fn: func(context.Context, json.RawMessage) tools.Result {
		h.clock.Advance(1250 * time.Millisecond)
		return tools.Result{Output: map[string]any{"stdout": "1\n"}, CodeRun: cr, Usage: tools.Usage{SandboxMillis: 1200}}
	}}
	h = newHarness(t, calls(call("c1", "commonly_run_code", `{"code":"print(1)"}`)), answer("1"))
	h.withTools(tool)
	h.run(context.Background())
	rec := h.r().Steps[0].ToolCalls[0]
	if rec.ElapsedMs != 1250 || rec.CodeRun != cr || !rec.OK {
		t.Fatalf("record %+v", rec)
	}
}

func TestFatalToolErrorEndsTheTurn(t *testing.T) {
	for _, infra := range []bool{true, false} {
		lost := &fakeTool{name: "commonly_run_code", fn: func(context.Context, json.RawMessage) tools.Result {
			r := tools.Fail(runs.ErrSandbox, infra, errors.New("sandbox lost"))
			r.Usage = tools.Usage{SandboxMillis: 500}
			return r
		}}
		after := &fakeTool{name: "search"}
		// No second reply: the fatal error must not be fed to the model.
		h := newHarness(t, calls(call("c1", "commonly_run_code", `{"code":"x"}`), call("c2", "search", `{}`)))
		h.withTools(lost, after)
		out := h.run(context.Background())

		wantEnd(t, h.r(), runs.StatusFailed, runs.ErrSandbox)
		// The tool's verdict is passed on; the model answered once, so
		// the rule refunds neither.
		if out.Infrastructure != infra || h.refunded(out) || kindOf(t, out) != runs.ErrSandbox {
			t.Fatalf("infra %v: outcome %+v", infra, out)
		}
		var fe *tools.FatalError
		if !errors.As(out.Err, &fe) {
			t.Fatalf("cause not reachable: %v", out.Err)
		}
		if h.model.calls != 1 || after.calls != 0 {
			t.Fatalf("model calls %d, later tool calls %d", h.model.calls, after.calls)
		}
		// Fixed words on the run; the provider's words in the log only.
		if h.r().ErrorMessage != "tool commonly_run_code failed: the code sandbox failed or was lost" || h.r().Cost.SandboxMicros != 1000 {
			t.Fatalf("message %q sandbox cost %d", h.r().ErrorMessage, h.r().Cost.SandboxMicros)
		}
		if !strings.Contains(h.logs.String(), "sandbox lost") {
			t.Fatal("the cause was not logged")
		}
		if rec := h.r().Steps[0].ToolCalls; len(rec) != 1 || rec[0].OK {
			t.Fatalf("records %+v", rec)
		}
	}
}

// Issue 9, item 1: a sandbox lost after two model calls and a post to the
// pod is an infrastructure failure after model output, so the turn is not
// refunded (before the rule, the tool's flag was the refund: model calls
// 2, postedToPod true, refunded true).
func TestInfrastructureFailureAfterModelOutputIsNotRefunded(t *testing.T) {
	post := &fakeTool{name: "commonly_post_message", fn: func(context.Context, json.RawMessage) tools.Result {
		return tools.Result{Output: map[string]any{"messageId": "m1"}, Posted: true}
	}}
	lost := &fakeTool{name: "commonly_run_code", fn: func(context.Context, json.RawMessage) tools.Result {
		return tools.Fail(runs.ErrSandbox, true, errors.New("stream ended without end_of_execution"))
	}}
	h := newHarness(t,
		calls(call("c1", "commonly_post_message", `{"content":"on it"}`)),
		calls(call("c2", "commonly_run_code", `{"language":"python","code":"import os; os._exit(0)"}`)),
	)
	h.withTools(post, lost)
	out := h.run(context.Background())
	wantEnd(t, h.r(), runs.StatusFailed, runs.ErrSandbox)
	if h.model.calls != 2 || !h.r().PostedToPod || !out.Infrastructure || h.refunded(out) {
		t.Fatalf("model calls %d, postedToPod %v, infrastructure %v, refunded %v",
			h.model.calls, h.r().PostedToPod, out.Infrastructure, h.refunded(out))
	}
}

func TestFatalWithoutKindIsToolError(t *testing.T) {
	tool := &fakeTool{name: "x", fn: func(context.Context, json.RawMessage) tools.Result {
		return tools.Result{Fatal: &tools.FatalError{Err: errors.New("broken")}}
	}}
	h := newHarness(t, calls(call("c1", "x", `{}`)))
	h.withTools(tool)
	h.run(context.Background())
	wantEnd(t, h.r(), runs.StatusFailed, runs.ErrToolError)
}

func TestRepeatBreaker(t *testing.T) {
	cases := []struct {
		name  string
		calls [][2]string // name, args, one model answer each
		stops bool
		runs  int // tool executions
	}{
		{"three identical", [][2]string{{"search", `{"q":"a"}`}, {"search", `{"q":"a"}`}, {"search", `{"q":"a"}`}}, true, 2},
		{"same after normalising", [][2]string{{"search", `{"q":"a","n":1}`}, {"search", `{ "n":1, "q":"a" }`}, {"search", `{"n":1,"q":"a"}`}}, true, 2},
		{"empty is the empty object", [][2]string{{"search", ``}, {"search", `{}`}, {"search", ` `}}, true, 2},
		{"refused calls count too", [][2]string{{"nope", `{}`}, {"nope", `{}`}, {"nope", `{}`}}, true, 0},
		{"a different call in between resets", [][2]string{{"search", `{"q":"a"}`}, {"search", `{"q":"a"}`}, {"search", `{"q":"b"}`}, {"search", `{"q":"a"}`}}, false, 4},
		{"other tool resets", [][2]string{{"search", `{}`}, {"search", `{}`}, {"other", `{}`}, {"search", `{}`}}, false, 4},
		{"numbers kept as written", [][2]string{{"search", `{"n":1}`}, {"search", `{"n":1.0}`}, {"search", `{"n":1}`}}, false, 3},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var script []reply
			for i, cl := range c.calls {
				script = append(script, calls(call("c"+string(rune('a'+i)), cl[0], cl[1])))
			}
			if !c.stops {
				script = append(script, answer("done"))
			}
			h := newHarness(t, script...)
			search, other := &fakeTool{name: "search"}, &fakeTool{name: "other"}
			h.withTools(search, other)
			h.run(context.Background())
			if got := search.calls + other.calls; got != c.runs {
				t.Fatalf("tools ran %d times, want %d", got, c.runs)
			}
			if !c.stops {
				wantEnd(t, h.r(), runs.StatusSucceeded, "")
				return
			}
			wantEnd(t, h.r(), runs.StatusFailed, runs.ErrTurnCap)
			if !strings.Contains(h.r().ErrorMessage, "same arguments 3 times in a row") {
				t.Fatalf("message %q", h.r().ErrorMessage)
			}
			last := h.r().Steps[2].ToolCalls
			if len(last) != 1 || last[0].OK {
				t.Fatalf("third call recorded as %+v", last)
			}
		})
	}
}

func TestRepeatLimitIsConfigurable(t *testing.T) {
	h := newHarness(t, calls(call("c1", "search", `{}`)), calls(call("c2", "search", `{}`)))
	h.loop.cfg.Limits.RepeatLimit = 2
	search := &fakeTool{name: "search"}
	h.withTools(search)
	h.run(context.Background())
	wantEnd(t, h.r(), runs.StatusFailed, runs.ErrTurnCap)
	if search.calls != 1 {
		t.Fatalf("search ran %d times", search.calls)
	}
}
