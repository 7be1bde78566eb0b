package shapes

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
	"github.com/commonly/runtime/shared/tools"
	"github.com/commonly/runtime/shared/tools/runcode"
	"github.com/commonly/runtime/shared/tools/search"
)

func request(messages ...llmtest.ChatMessage) llmtest.ChatRequest {
	return llmtest.ChatRequest{Model: "m", Messages: messages}
}

func user(text string) llmtest.ChatMessage {
	b, _ := json.Marshal(text)
	return llmtest.ChatMessage{Role: "user", Content: b}
}

// Each shape's first call calls its tool, or answers when it acts on
// nothing; the call after the tool's result answers with AnswerTokens
// words, one chunk each.
func TestRespondFollowsTheShape(t *testing.T) {
	want := map[string]string{"context-8k": ContextToolName, "code": runcode.Name, "search": search.Name}
	for _, s := range All {
		first := Respond(request(user(Message(s))))
		if !s.Acts() {
			if n := len(strings.Fields(first.Text)); n != s.AnswerTokens || len(first.ToolCalls) != 0 {
				t.Errorf("%s: a first call of %d words and %d tool calls", s.Name, n, len(first.ToolCalls))
			}
			continue
		}
		if len(first.ToolCalls) != 1 || first.Text != "" {
			t.Fatalf("%s: the first call answered %+v", s.Name, first)
		}
		if name, ok := want[s.Name]; ok && first.ToolCalls[0].Name != name {
			t.Errorf("%s calls %s, want %s", s.Name, first.ToolCalls[0].Name, name)
		}
		second := Respond(request(user(Message(s)), llmtest.ChatMessage{Role: "tool", Content: json.RawMessage(`"{}"`)}))
		if n := len(strings.Fields(second.Text)); n != s.AnswerTokens {
			t.Errorf("%s: an answer of %d words, want %d", s.Name, n, s.AnswerTokens)
		}
		if second.Usage == nil || second.Usage.Completion != int64(s.AnswerTokens) {
			t.Errorf("%s: the answer's usage %+v", s.Name, second.Usage)
		}
	}
	if got := Respond(request(user("no directive"))); !strings.Contains(got.Text, "no shape") {
		t.Errorf("a message without a shape: %+v", got)
	}
}

// The prompt is billed as its bytes over CharsPerToken.
func TestPromptTokensAreTheRequestsText(t *testing.T) {
	msg := strings.Repeat("abcd", 1000)
	if got := promptTokens(request(user(msg))); got < 1000 || got > 1002 {
		t.Errorf("4,000 bytes of text billed %d tokens", got)
	}
}

// The context tool answers about as many tokens as it is asked for, in
// the pod context tool's shape, and refuses what is out of range.
func TestContextToolAnswersTheTokensAsked(t *testing.T) {
	for _, tokens := range []int{500, 8_000, 50_000} {
		res := ContextTool{}.Call(context.Background(), tools.Env{}, json.RawMessage(`{"tokens":`+itoa(tokens)+`}`))
		if res.Err != nil {
			t.Fatal(res.Err)
		}
		b, _ := json.Marshal(res.Output)
		if got, want := len(b), tokens*CharsPerToken; got < want || got > want+want/20+700 {
			t.Errorf("%d tokens asked: %d bytes, want about %d", tokens, got, want)
		}
	}
	for _, bad := range []string{`{"tokens":0}`, `{"tokens":1000000}`, `{}`, `{"tokens":"x"}`} {
		if res := (ContextTool{}).Call(context.Background(), tools.Env{}, json.RawMessage(bad)); res.Err == nil {
			t.Errorf("%s accepted", bad)
		}
	}
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

// The pacer holds the first chunk TimeToFirst and each later one
// Interval, and records the call's time.
func TestPacerPacesAStream(t *testing.T) {
	model := llmtest.NewServer("k", llmtest.Text("one two three four five "))
	p := &Pacer{Model: model, TimeToFirst: 60 * time.Millisecond, Interval: 10 * time.Millisecond}
	srv := httptest.NewServer(p)
	defer srv.Close()
	req, _ := http.NewRequest(http.MethodPost, srv.URL+"/v1/chat/completions",
		strings.NewReader(`{"model":"m","stream":true,"messages":[{"role":"user","content":"hi"}]}`))
	req.Header.Set("Authorization", "Bearer k")
	start := time.Now()
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	elapsed := time.Since(start)
	chunks := strings.Count(string(body), "data: {")
	if min := 60*time.Millisecond + time.Duration(chunks-1)*10*time.Millisecond; elapsed < min {
		t.Errorf("%d chunks in %v, want at least %v", chunks, elapsed, min)
	}
	if calls, d := p.ModelTime(); calls != 1 || d < 60*time.Millisecond {
		t.Errorf("recorded %d calls, %v", calls, d)
	}
}

func TestSelect(t *testing.T) {
	if all, err := Select("all"); err != nil || len(all) != len(All) {
		t.Errorf("all: %d, %v", len(all), err)
	}
	if two, err := Select("code, search"); err != nil || len(two) != 2 || two[1].Name != "search" {
		t.Errorf("code, search: %+v, %v", two, err)
	}
	if _, err := Select("nope"); err == nil {
		t.Error("an unknown shape accepted")
	}
}
