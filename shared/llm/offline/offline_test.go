package offline_test

import (
	"context"
	"encoding/json"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/commonly/runtime/shared/llm"
	"github.com/commonly/runtime/shared/llm/offline"
)

var (
	runCode   = llm.ToolSpec{Name: offline.RunCodeTool, Parameters: map[string]any{"type": "object"}}
	webSearch = llm.ToolSpec{Name: offline.WebSearchTool, Parameters: map[string]any{"type": "object"}}
)

// newClient is the real client on the in-process offline model.
func newClient(t *testing.T) *llm.Client {
	t.Helper()
	c, err := llm.New(llm.Config{BaseURL: offline.BaseURL, HTTPClient: offline.HTTPClient()})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return c
}

func ask(text string, tools ...llm.ToolSpec) llm.Request {
	return llm.Request{
		Model: "any-configured-model",
		Messages: []llm.Message{
			{Role: llm.RoleSystem, Content: "You are an agent in a pod."},
			{Role: llm.RoleUser, Content: text},
		},
		Tools: tools,
		User:  "u_1",
	}
}

func TestFirstAnswer(t *testing.T) {
	type call struct {
		name string
		args map[string]string
	}
	cases := []struct {
		name  string
		text  string
		tools []llm.ToolSpec
		want  []call // nil: a text answer
	}{
		{"python block", "Please run:\n```python\nprint(6*7)\n```", []llm.ToolSpec{runCode, webSearch},
			[]call{{offline.RunCodeTool, map[string]string{"language": "python", "code": "print(6*7)"}}}},
		{"py block", "```py\nx = 1\nprint(x)\n```", []llm.ToolSpec{runCode},
			[]call{{offline.RunCodeTool, map[string]string{"language": "python", "code": "x = 1\nprint(x)"}}}},
		{"bare fence is python", "```\nprint('hi')\n```", []llm.ToolSpec{runCode},
			[]call{{offline.RunCodeTool, map[string]string{"language": "python", "code": "print('hi')"}}}},
		{"js block", "```js\nconsole.log(1)\n```", []llm.ToolSpec{runCode},
			[]call{{offline.RunCodeTool, map[string]string{"language": "javascript", "code": "console.log(1)"}}}},
		{"javascript block after a bash one", "```bash\nls\n```\n```javascript\nconsole.log(2)\n```", []llm.ToolSpec{runCode},
			[]call{{offline.RunCodeTool, map[string]string{"language": "javascript", "code": "console.log(2)"}}}},
		{"search line", "hello\nsearch: go 1.26 release notes\n", []llm.ToolSpec{runCode, webSearch},
			[]call{{offline.WebSearchTool, map[string]string{"query": "go 1.26 release notes"}}}},
		{"both", "```python\n1\n```\nSearch: pi", []llm.ToolSpec{runCode, webSearch},
			[]call{{offline.RunCodeTool, map[string]string{"language": "python", "code": "1"}}, {offline.WebSearchTool, map[string]string{"query": "pi"}}}},
		{"code but tool not offered", "```python\nprint(1)\n```", []llm.ToolSpec{webSearch}, nil},
		{"search but tool not offered", "search: cats", nil, nil},
		{"unclosed fence", "```python\nprint(1)", []llm.ToolSpec{runCode}, nil},
		{"empty search", "search:   ", []llm.ToolSpec{webSearch}, nil},
		{"plain", "What can you do?", []llm.ToolSpec{runCode, webSearch}, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			resp, err := newClient(t).Complete(context.Background(), ask(tc.text, tc.tools...))
			if err != nil {
				t.Fatalf("Complete: %v", err)
			}
			if !strings.HasPrefix(resp.Message.Content, offline.Label) {
				t.Errorf("answer not labelled offline: %q", resp.Message.Content)
			}
			if resp.Model != offline.Model || resp.CallID != "offline-1" {
				t.Errorf("model %q call id %q", resp.Model, resp.CallID)
			}
			if resp.Usage.PromptTokens == 0 || resp.Usage.CompletionTokens == 0 {
				t.Errorf("usage = %+v", resp.Usage)
			}
			var got []call
			for _, tcall := range resp.Message.ToolCalls {
				var args map[string]string
				if err := json.Unmarshal([]byte(tcall.Arguments), &args); err != nil {
					t.Fatalf("arguments %q: %v", tcall.Arguments, err)
				}
				got = append(got, call{tcall.Name, args})
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("calls = %+v, want %+v", got, tc.want)
			}
			wantFinish := "stop"
			if tc.want != nil {
				wantFinish = "tool_calls"
			}
			if resp.FinishReason != wantFinish {
				t.Errorf("finish = %q, want %q", resp.FinishReason, wantFinish)
			}
		})
	}
}

func TestAnswersToolResults(t *testing.T) {
	c := newClient(t)
	req := ask("```python\nprint(6*7)\n```\nsearch: meaning of life", runCode, webSearch)
	first, err := c.Complete(context.Background(), req)
	if err != nil {
		t.Fatalf("first: %v", err)
	}
	if len(first.Message.ToolCalls) != 2 {
		t.Fatalf("calls = %+v", first.Message.ToolCalls)
	}
	long := strings.Repeat("z", 5000)
	req.Messages = append(req.Messages, first.Message,
		llm.Message{Role: llm.RoleTool, ToolCallID: first.Message.ToolCalls[0].ID, Content: `{"ok":true,"stdout":"42\n"}`},
		llm.Message{Role: llm.RoleTool, ToolCallID: first.Message.ToolCalls[1].ID, Content: long},
	)
	second, err := c.Complete(context.Background(), req)
	if err != nil {
		t.Fatalf("second: %v", err)
	}
	text := second.Message.Content
	if !strings.HasPrefix(text, offline.Label) || len(second.Message.ToolCalls) != 0 || second.FinishReason != "stop" {
		t.Fatalf("second = %+v", second)
	}
	if !strings.Contains(text, offline.RunCodeTool+`: {"ok":true,"stdout":"42\n"}`) || !strings.Contains(text, offline.WebSearchTool+": zzz") {
		t.Errorf("tool output not quoted: %q", text)
	}
	if len(text) > 1500 {
		t.Errorf("long tool output not truncated: %d bytes", len(text))
	}
	if second.CallID != "offline-2" {
		t.Errorf("call id = %q", second.CallID)
	}
	// The second prompt repeats the first: the prefix is reported cached,
	// in whole 64-token blocks, never more than the prompt.
	u := second.Usage
	if u.CachedPromptTokens == 0 || u.CachedPromptTokens%64 != 0 || u.CachedPromptTokens > u.PromptTokens || u.PromptTokens <= first.Usage.PromptTokens {
		t.Errorf("usage first %+v second %+v", first.Usage, u)
	}
}

func TestDeterministic(t *testing.T) {
	req := ask("Tell me something.\n" + strings.Repeat("context ", 200))
	a, err := newClient(t).Complete(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	b, err := newClient(t).Complete(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(a, b) {
		t.Errorf("two fresh models answered differently:\n%+v\n%+v", a, b)
	}
	// About one token per four characters of the serialized prompt.
	if a.Usage.PromptTokens < 1600/4 || a.Usage.PromptTokens > 4000/4 || a.Usage.CachedPromptTokens != 0 {
		t.Errorf("usage = %+v", a.Usage)
	}
}

// Streamed, the offline model answers what it answers whole, through the
// real client: its text in pieces (each an OnText call, the first long
// before the stream ends: the transport does not buffer), the tool calls
// whole, and the usage.
func TestStreamedAnswerArrivesInPieces(t *testing.T) {
	h := offline.NewHandler()
	h.Pace = 100 * time.Millisecond
	c, err := llm.New(llm.Config{BaseURL: offline.BaseURL, HTTPClient: &http.Client{Transport: offline.Transport{Handler: h}}})
	if err != nil {
		t.Fatal(err)
	}
	whole, err := newClient(t).Complete(context.Background(), ask("Please run:\n```python\nprint(6*7)\n```", runCode))
	if err != nil {
		t.Fatal(err)
	}
	req := ask("Please run:\n```python\nprint(6*7)\n```", runCode)
	req.Stream = true
	var pieces []string
	var first time.Time
	req.OnText = func(s string) {
		if first.IsZero() {
			first = time.Now()
		}
		pieces = append(pieces, s)
	}
	resp, err := c.Complete(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if len(pieces) < 3 || strings.Join(pieces, "") != whole.Message.Content || resp.Message.Content != whole.Message.Content {
		t.Fatalf("pieces %q, whole %q", pieces, whole.Message.Content)
	}
	if lead := time.Since(first); lead < time.Duration(len(pieces)-2)*h.Pace {
		t.Errorf("the first piece came %s before the end of %d pieces %s apart: buffered", lead, len(pieces), h.Pace)
	}
	if len(resp.Message.ToolCalls) != 1 || resp.Message.ToolCalls[0].Arguments != whole.Message.ToolCalls[0].Arguments ||
		resp.FinishReason != "tool_calls" || resp.UsageMissing || resp.Usage.CompletionTokens != whole.Usage.CompletionTokens {
		t.Fatalf("streamed %+v\nwhole %+v", resp, whole)
	}
}
