package llm_test

import (
	"context"
	"reflect"
	"testing"
	"time"

	"github.com/commonly/runtime/shared/llm"
	"github.com/commonly/runtime/shared/llm/llmtest"
)

func TestRequestFields(t *testing.T) {
	cases := []struct {
		name           string
		req            llm.Request
		wantToolChoice string // raw JSON, "" = absent
		wantTools      []string
		wantUser       *string
		wantMaxTokens  *int64
	}{
		{
			name: "no tools, no user, no cap",
			req:  userRequest("hi"),
		},
		{
			name: "tools offered with user and cap",
			req: func() llm.Request {
				r := userRequest("hi")
				r.Tools = []llm.ToolSpec{runCode, {Name: "commonly_web_search", Parameters: map[string]any{"type": "object"}}}
				r.User = "u_9"
				r.MaxTokens = 2048
				return r
			}(),
			wantToolChoice: `"auto"`,
			wantTools:      []string{"commonly_run_code", "commonly_web_search"},
			wantUser:       ptr("u_9"),
			wantMaxTokens:  ptr[int64](2048),
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, fake := start(t, 5*time.Second, llmtest.Text("hello"))
			resp, err := c.Complete(context.Background(), tc.req)
			if err != nil {
				t.Fatalf("Complete: %v", err)
			}
			if resp.Message.Content != "hello" || resp.Message.Role != llm.RoleAssistant || resp.FinishReason != "stop" {
				t.Errorf("response = %+v", resp)
			}
			if resp.Model != testModel {
				t.Errorf("model = %q", resp.Model)
			}
			reqs := fake.Requests()
			if len(reqs) != 1 {
				t.Fatalf("fake got %d requests, want 1", len(reqs))
			}
			got := reqs[0]
			if got.Path != "/v1/chat/completions" {
				t.Errorf("path = %q", got.Path)
			}
			if h := got.Header.Get("Authorization"); h != "Bearer "+testKey {
				t.Errorf("Authorization = %q", h)
			}
			b := got.Body
			if b.Model != testModel || b.Stream {
				t.Errorf("model %q stream %v", b.Model, b.Stream)
			}
			if string(b.ToolChoice) != tc.wantToolChoice {
				t.Errorf("tool_choice = %s, want %s", b.ToolChoice, tc.wantToolChoice)
			}
			var names []string
			for _, tl := range b.Tools {
				if tl.Type != "function" {
					t.Errorf("tool type = %q", tl.Type)
				}
				names = append(names, tl.Function.Name)
			}
			if !reflect.DeepEqual(names, tc.wantTools) {
				t.Errorf("tools = %v, want %v", names, tc.wantTools)
			}
			if len(b.Tools) > 0 {
				f := b.Tools[0].Function
				if f.Description != runCode.Description || !reflect.DeepEqual(f.Parameters, runCode.Parameters) {
					t.Errorf("tool sent as %+v", f)
				}
			}
			if b.ParallelToolCalls != nil {
				t.Errorf("parallel_tool_calls sent: %v", *b.ParallelToolCalls)
			}
			if !reflect.DeepEqual(b.User, tc.wantUser) {
				t.Errorf("user = %v, want %v", deref(b.User), deref(tc.wantUser))
			}
			if !reflect.DeepEqual(b.MaxTokens, tc.wantMaxTokens) {
				t.Errorf("max_tokens = %v, want %v", deref(b.MaxTokens), deref(tc.wantMaxTokens))
			}
			if len(b.Messages) != 2 || b.Messages[0].Role != "system" || b.Messages[0].Text() != "You are terse." ||
				b.Messages[1].Role != "user" || b.Messages[1].Text() != "hi" {
				t.Errorf("messages = %+v", b.Messages)
			}
		})
	}
}

func TestToolCallRoundTrip(t *testing.T) {
	// Malformed arguments come back verbatim: validating them is the loop's job.
	calls := []llmtest.ToolCall{
		{ID: "call_a", Name: "commonly_run_code", Arguments: `{"language":"python","code":"print(1)"}`},
		{ID: "call_b", Name: "commonly_run_code", Arguments: `{"code":`},
		{ID: "call_c", Name: "commonly_web_search", Arguments: ""},
	}
	c, fake := start(t, 5*time.Second, llmtest.Calls(calls...), llmtest.Text("all done"))
	req := userRequest("run it")
	req.Tools = []llm.ToolSpec{runCode}

	first, err := c.Complete(context.Background(), req)
	if err != nil {
		t.Fatalf("first Complete: %v", err)
	}
	if first.FinishReason != "tool_calls" || first.Message.Content != "" {
		t.Errorf("first = %+v", first)
	}
	want := []llm.ToolCall{
		{ID: "call_a", Name: "commonly_run_code", Arguments: `{"language":"python","code":"print(1)"}`},
		{ID: "call_b", Name: "commonly_run_code", Arguments: `{"code":`},
		{ID: "call_c", Name: "commonly_web_search", Arguments: ""},
	}
	if !reflect.DeepEqual(first.Message.ToolCalls, want) {
		t.Fatalf("tool calls = %+v, want %+v", first.Message.ToolCalls, want)
	}

	req.Messages = append(req.Messages, first.Message,
		llm.Message{Role: llm.RoleTool, ToolCallID: "call_a", Content: `{"ok":true,"stdout":"1\n"}`},
		llm.Message{Role: llm.RoleTool, ToolCallID: "call_b", Content: `{"ok":false,"error":"invalid arguments"}`},
		llm.Message{Role: llm.RoleTool, ToolCallID: "call_c", Content: ""},
	)
	second, err := c.Complete(context.Background(), req)
	if err != nil {
		t.Fatalf("second Complete: %v", err)
	}
	if second.Message.Content != "all done" {
		t.Errorf("second content = %q", second.Message.Content)
	}

	sent := fake.Requests()[1].Body.Messages
	if len(sent) != 6 {
		t.Fatalf("second request has %d messages, want 6", len(sent))
	}
	echo := sent[2]
	if echo.Role != "assistant" || string(echo.Content) != "null" {
		t.Errorf("assistant echo role %q content %s, want assistant null", echo.Role, echo.Content)
	}
	for i, tc := range echo.ToolCalls {
		if tc.ID != want[i].ID || tc.Type != "function" || tc.Function.Name != want[i].Name || tc.Function.Arguments != want[i].Arguments {
			t.Errorf("echoed call %d = %+v, want %+v", i, tc, want[i])
		}
	}
	for i, m := range sent[3:] {
		if m.Role != "tool" || m.ToolCallID != want[i].ID || m.Text() != req.Messages[3+i].Content || m.Content[0] != '"' {
			t.Errorf("tool message %d = %+v", i, m)
		}
	}
}

// The fake enforces the history rules; through the real client a broken
// history is a 400, reported as ErrCall, and plays no step.
func TestBrokenHistoryRejected(t *testing.T) {
	call := llm.Message{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{
		{ID: "call_1", Name: "commonly_run_code", Arguments: "{}"},
		{ID: "call_2", Name: "commonly_run_code", Arguments: "{}"},
	}}
	cases := []struct {
		name    string
		history []llm.Message
	}{
		{"missing tool reply", []llm.Message{call, {Role: llm.RoleTool, ToolCallID: "call_1", Content: "x"}}},
		{"unknown tool_call_id", []llm.Message{call,
			{Role: llm.RoleTool, ToolCallID: "call_1", Content: "x"},
			{Role: llm.RoleTool, ToolCallID: "call_9", Content: "x"}}},
		{"user before tool replies", []llm.Message{call, {Role: llm.RoleUser, Content: "hm"}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, fake := start(t, 5*time.Second, llmtest.Text("unreachable"))
			req := userRequest("go")
			req.Messages = append(req.Messages, tc.history...)
			_, err := c.Complete(context.Background(), req)
			ce := callError(t, err, llm.ErrCall)
			if ce.Status != 400 {
				t.Errorf("status = %d, want 400", ce.Status)
			}
			if fake.Remaining() != 1 {
				t.Errorf("a rejected request played a step")
			}
		})
	}
}

func TestReasoningContentRoundTrip(t *testing.T) {
	cases := []struct {
		name      string
		reasoning *string // on the tool-calling answer
	}{
		{"thinking text", ptr("The user wants 1+1; run it.")},
		{"empty but present", ptr("")},
		{"absent (thinking disabled)", nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			step := llmtest.Calls(llmtest.ToolCall{ID: "call_r", Name: "commonly_run_code", Arguments: `{"code":"1+1"}`})
			step.Reasoning = tc.reasoning
			c, fake := start(t, 5*time.Second, step, llmtest.Text("2").WithReasoning("It printed 2."))
			req := userRequest("1+1?")
			req.Tools = []llm.ToolSpec{runCode}

			first, err := c.Complete(context.Background(), req)
			if err != nil {
				t.Fatalf("first: %v", err)
			}
			if want := str(tc.reasoning); first.Message.ReasoningContent != want {
				t.Errorf("reasoning = %q, want %q", first.Message.ReasoningContent, want)
			}
			req.Messages = append(req.Messages, first.Message, llm.Message{Role: llm.RoleTool, ToolCallID: "call_r", Content: "2"})
			second, err := c.Complete(context.Background(), req)
			if err != nil {
				t.Fatalf("second (fake rejects a dropped reasoning_content): %v", err)
			}
			if second.Message.Content != "2" || second.Message.ReasoningContent != "It printed 2." {
				t.Errorf("second = %+v: reasoning must stay out of content", second.Message)
			}
			echo := fake.Requests()[1].Body.Messages[2]
			if echo.ReasoningContent == nil || *echo.ReasoningContent != str(tc.reasoning) {
				t.Errorf("echoed reasoning_content = %v, want %q", echo.ReasoningContent, str(tc.reasoning))
			}

			// A later turn: the text answer's reasoning is not sent back.
			req.Messages = append(req.Messages, second.Message, llm.Message{Role: llm.RoleUser, Content: "thanks"})
			fake.Push(llmtest.Text("you're welcome"))
			if _, err := c.Complete(context.Background(), req); err != nil {
				t.Fatalf("third: %v", err)
			}
			msgs := fake.Requests()[2].Body.Messages
			if text := msgs[4]; text.Role != "assistant" || text.ReasoningContent != nil || text.Text() != "2" {
				t.Errorf("text answer echoed as %+v", text)
			}
		})
	}
}

func TestCallIDKept(t *testing.T) {
	named := llmtest.Text("a")
	named.CallID = "c0ffee-1234"
	c, _ := start(t, 5*time.Second, llmtest.Text("b"), named)
	for _, want := range []string{"llmtest-call-1", "c0ffee-1234"} {
		resp, err := c.Complete(context.Background(), userRequest("x"))
		if err != nil {
			t.Fatalf("Complete: %v", err)
		}
		if resp.CallID != want {
			t.Errorf("CallID = %q, want %q", resp.CallID, want)
		}
	}
}

func TestInvalidRequestNotSent(t *testing.T) {
	cases := map[string]llm.Request{
		"no model":          {Messages: []llm.Message{{Role: llm.RoleUser, Content: "x"}}},
		"no messages":       {Model: testModel},
		"unknown role":      {Model: testModel, Messages: []llm.Message{{Role: "developer", Content: "x"}}},
		"tool without id":   {Model: testModel, Messages: []llm.Message{{Role: llm.RoleTool, Content: "x"}}},
		"call without id":   {Model: testModel, Messages: []llm.Message{{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{{Name: "f"}}}}},
		"call without name": {Model: testModel, Messages: []llm.Message{{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{{ID: "c"}}}}},
	}
	for name, req := range cases {
		t.Run(name, func(t *testing.T) {
			c, fake := start(t, 5*time.Second, llmtest.Text("x"))
			_, err := c.Complete(context.Background(), req)
			ce := callError(t, err, llm.ErrCall)
			if ce.Billed || fake.Count() != 0 {
				t.Errorf("invalid request was sent (billed %v, requests %d)", ce.Billed, fake.Count())
			}
		})
	}
}

func deref[T any](p *T) any {
	if p == nil {
		return nil
	}
	return *p
}

func str(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}
