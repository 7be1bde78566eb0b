package llmtest_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/commonly/runtime/shared/llm/llmtest"
)

const key = "test-key"

type answer struct {
	status int
	header http.Header
	body   map[string]any
	raw    string
}

func post(t *testing.T, url, auth, body string) answer {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("POST: %v", err)
	}
	defer res.Body.Close()
	raw, _ := io.ReadAll(res.Body)
	a := answer{status: res.StatusCode, header: res.Header, raw: string(raw)}
	if err := json.Unmarshal(raw, &a.body); err != nil {
		t.Fatalf("answer is not JSON: %s", raw)
	}
	if res.Header.Get(llmtest.CallIDHeader) == "" {
		t.Errorf("answer %d has no %s", res.StatusCode, llmtest.CallIDHeader)
	}
	if (res.StatusCode == http.StatusOK) != (res.Header.Get(llmtest.CostHeader) != "") {
		t.Errorf("status %d with cost header %q", res.StatusCode, res.Header.Get(llmtest.CostHeader))
	}
	return a
}

func serve(t *testing.T, steps ...llmtest.Step) (*llmtest.Server, string) {
	t.Helper()
	fake := llmtest.NewServer(key, steps...)
	srv := httptest.NewServer(fake)
	t.Cleanup(srv.Close)
	return fake, srv.URL
}

const hello = `{"model":"m","messages":[{"role":"user","content":"hi"}]}`

// errorOf returns error.message and error.code, checking LiteLLM's shape.
func errorOf(t *testing.T, a answer) (any, string) {
	t.Helper()
	e, ok := a.body["error"].(map[string]any)
	if !ok {
		t.Fatalf("no error object in %s", a.raw)
	}
	code, ok := e["code"].(string)
	if !ok {
		t.Errorf("error.code %v is not a string", e["code"])
	}
	return e["message"], code
}

func TestAuthAndPaths(t *testing.T) {
	fake, url := serve(t, llmtest.Text("a"), llmtest.Text("b"))
	for _, auth := range []string{"", "Bearer wrong", key} {
		a := post(t, url+"/chat/completions", auth, hello)
		if _, code := errorOf(t, a); a.status != 401 || code != "401" {
			t.Errorf("auth %q: status %d code %q", auth, a.status, code)
		}
	}
	if a := post(t, url+"/v2/chat/completions", "Bearer "+key, hello); a.status != 404 {
		t.Errorf("unknown path: %d", a.status)
	}
	if fake.Remaining() != 2 {
		t.Fatalf("rejected requests played steps")
	}
	for _, path := range []string{"/chat/completions", "/v1/chat/completions"} {
		if a := post(t, url+path, "Bearer "+key, hello); a.status != 200 {
			t.Errorf("%s: %d %s", path, a.status, a.raw)
		}
	}
	a := post(t, url+"/chat/completions", "Bearer "+key, hello)
	if msg, _ := errorOf(t, a); a.status != 500 || !strings.Contains(msg.(string), "script exhausted") {
		t.Errorf("past the script: %d %v", a.status, msg)
	}
	if fake.Count() != 7 {
		t.Errorf("Count = %d, want 7", fake.Count())
	}
}

func TestHistoryValidation(t *testing.T) {
	const call = `{"role":"assistant","content":null,%s"tool_calls":[{"id":"call_1","type":"function","function":{"name":"run","arguments":"{\"a\":1}"}}]}`
	withReasoning := strings.Replace(call, "%s", `"reasoning_content":"",`, 1)
	without := strings.Replace(call, "%s", "", 1)
	changed := strings.Replace(withReasoning, `{\"a\":1}`, `{\"a\":2}`, 1)
	const user = `{"role":"user","content":"go"}`
	const reply = `{"role":"tool","tool_call_id":"call_1","content":"1"}`
	const tools = `"tools":[{"type":"function","function":{"name":"run","parameters":{"type":"object"}}}]`
	body := func(msgs ...string) string {
		return `{"model":"m",` + tools + `,"tool_choice":"auto","messages":[` + strings.Join(msgs, ",") + `]}`
	}
	cases := []struct {
		name    string
		body    string
		wantMsg string // "" = accepted
	}{
		{"reasoning sent back", body(user, withReasoning, reply), ""},
		{"reasoning dropped", body(user, without, reply), llmtest.ReasoningDroppedMessage},
		{"arguments altered", body(user, changed, reply), "not echoed unchanged"},
		{"tool reply missing", body(user, withReasoning), llmtest.MissingToolReplyMessage + "call_1"},
		{"user before the tool reply", body(user, withReasoning, user, reply), llmtest.MissingToolReplyMessage},
		{"unknown tool_call_id", body(user, withReasoning, strings.Replace(reply, "call_1", "call_9", 1)), llmtest.OrphanToolMessage},
		{"tool_call_id missing", body(user, `{"role":"tool","content":"1"}`), llmtest.OrphanToolMessage},
		{"tool content not a string", body(user, withReasoning, `{"role":"tool","tool_call_id":"call_1","content":null}`), "must be a string"},
		{"tool_choice without tools", `{"model":"m","tool_choice":"auto","messages":[` + user + `]}`, "only allowed when 'tools'"},
		{"no model", `{"messages":[` + user + `]}`, "model is required"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			// The first step issues call_1 with reasoning_content "", which
			// must come back even though it is empty.
			fake, url := serve(t, llmtest.Calls(llmtest.ToolCall{ID: "call_1", Name: "run", Arguments: `{"a":1}`}).WithReasoning(""), llmtest.Text("ok"))
			if a := post(t, url+"/chat/completions", "Bearer "+key, body(user)); a.status != 200 {
				t.Fatalf("first call: %d %s", a.status, a.raw)
			}
			a := post(t, url+"/chat/completions", "Bearer "+key, tc.body)
			if tc.wantMsg == "" {
				if a.status != 200 {
					t.Errorf("rejected: %d %s", a.status, a.raw)
				}
				return
			}
			msg, code := errorOf(t, a)
			if a.status != 400 || code != "400" || !strings.Contains(msg.(string), tc.wantMsg) {
				t.Errorf("got %d %q, want 400 with %q", a.status, msg, tc.wantMsg)
			}
			if fake.Remaining() != 1 {
				t.Errorf("a rejected request played a step")
			}
		})
	}
}

func TestFaults(t *testing.T) {
	t.Run("429", func(t *testing.T) {
		_, url := serve(t, llmtest.RateLimited())
		a := post(t, url+"/chat/completions", "Bearer "+key, hello)
		msg, code := errorOf(t, a)
		if a.status != 429 || code != "429" || a.header.Get("Retry-After") == "" {
			t.Errorf("%d code %q headers %v", a.status, code, a.header)
		}
		if _, ok := msg.(string); !ok {
			t.Errorf("message %v is not a string", msg)
		}
	})
	t.Run("503", func(t *testing.T) {
		_, url := serve(t, llmtest.ServerError(503))
		a := post(t, url+"/chat/completions", "Bearer "+key, hello)
		if _, code := errorOf(t, a); a.status != 503 || code != "503" {
			t.Errorf("%d %q", a.status, code)
		}
	})
	t.Run("guardrail object message", func(t *testing.T) {
		_, url := serve(t, llmtest.Guardrail("bad words"))
		a := post(t, url+"/chat/completions", "Bearer "+key, hello)
		msg, code := errorOf(t, a)
		obj, ok := msg.(map[string]any)
		if a.status != 400 || code != "400" || !ok || obj["error"] != "Violated guardrail policy" || obj["detected_text"] != "bad words" {
			t.Errorf("%d %q %v", a.status, code, msg)
		}
	})
	t.Run("empty choices", func(t *testing.T) {
		_, url := serve(t, llmtest.EmptyChoices())
		a := post(t, url+"/chat/completions", "Bearer "+key, hello)
		if ch, ok := a.body["choices"].([]any); a.status != 200 || !ok || len(ch) != 0 {
			t.Errorf("%d %s", a.status, a.raw)
		}
	})
	t.Run("hang until the client gives up", func(t *testing.T) {
		fake := llmtest.NewServer(key, llmtest.Hang())
		fake.HangLimit = time.Minute // only the client may release it here
		srv := httptest.NewServer(fake)
		url := srv.URL
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		defer cancel()
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url+"/chat/completions", strings.NewReader(hello))
		req.Header.Set("Authorization", "Bearer "+key)
		if res, err := http.DefaultClient.Do(req); err == nil {
			res.Body.Close()
			t.Fatalf("hang answered %d", res.StatusCode)
		}
		// The handler returns once the client is gone; Close waits for it.
		closed := make(chan struct{})
		go func() { srv.Close(); close(closed) }()
		select {
		case <-closed:
		case <-time.After(5 * time.Second):
			t.Fatal("hang was not released by the client's cancellation")
		}
		if fake.Requests()[0].Status == 0 {
			t.Errorf("the released hang recorded no answer")
		}
	})
}

func TestAnswers(t *testing.T) {
	t.Run("parallel tool calls and reasoning", func(t *testing.T) {
		_, url := serve(t, llmtest.Calls(llmtest.Call("a", `{"x":`), llmtest.Call("b", "")).WithReasoning("hmm"))
		a := post(t, url+"/chat/completions", "Bearer "+key, hello)
		ch := a.body["choices"].([]any)[0].(map[string]any)
		msg := ch["message"].(map[string]any)
		calls := msg["tool_calls"].([]any)
		if ch["finish_reason"] != "tool_calls" || msg["content"] != nil || msg["reasoning_content"] != "hmm" || len(calls) != 2 {
			t.Fatalf("choice = %v", ch)
		}
		first, second := calls[0].(map[string]any), calls[1].(map[string]any)
		if first["id"] == second["id"] || first["function"].(map[string]any)["arguments"] != `{"x":` {
			t.Errorf("calls = %v", calls)
		}
	})
	usageCases := []struct {
		shape llmtest.UsageShape
		want  string
	}{
		{llmtest.OpenAIShape, `"prompt_tokens_details":{"cached_tokens":64}`},
		{llmtest.DeepSeekShape, `"prompt_cache_hit_tokens":64,"prompt_cache_miss_tokens":36`},
		{llmtest.NullDetailsShape, `"prompt_tokens_details":null`},
	}
	for _, uc := range usageCases {
		_, url := serve(t, llmtest.Text("x").WithUsage(llmtest.Usage{Shape: uc.shape, Prompt: 100, Cached: 64, Completion: 5}))
		if a := post(t, url+"/chat/completions", "Bearer "+key, hello); !strings.Contains(a.raw, uc.want) {
			t.Errorf("shape %d: %s lacks %s", uc.shape, a.raw, uc.want)
		}
	}
}

func TestRecordsRequests(t *testing.T) {
	fake, url := serve(t, llmtest.Text("x"))
	post(t, url+"/chat/completions", "Bearer "+key,
		`{"model":"m","user":"u_9","max_tokens":64,"tool_choice":"auto","tools":[{"type":"function","function":{"name":"run"}}],"messages":[{"role":"user","content":"hi"}]}`)
	r := fake.Requests()[0]
	b := r.Body
	if r.Status != 200 || *b.User != "u_9" || *b.MaxTokens != 64 || string(b.ToolChoice) != `"auto"` ||
		b.Tools[0].Function.Name != "run" || b.Messages[0].Text() != "hi" {
		t.Errorf("recorded %+v", r)
	}
}
