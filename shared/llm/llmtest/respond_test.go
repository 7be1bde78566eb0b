package llmtest_test

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/commonly/runtime/shared/llm/llmtest"
)

// TestRespondAnswersEachRequestFromItsOwnConversation: with Respond set,
// each request gets the step its messages call for, in any order, and
// the script is not consumed; nil goes back to the script.
func TestRespondAnswersEachRequestFromItsOwnConversation(t *testing.T) {
	fake, url := serve(t, llmtest.Text("scripted"))
	fake.Respond(func(req llmtest.ChatRequest) llmtest.Step {
		var text string
		_ = json.Unmarshal(req.Messages[len(req.Messages)-1].Content, &text)
		if text == "fail" {
			return llmtest.ServerError(http.StatusInternalServerError)
		}
		return llmtest.Text("echo " + text)
	})
	for _, msg := range []string{"b", "fail", "a"} {
		a := post(t, url+"/chat/completions", "Bearer "+key, `{"model":"m","messages":[{"role":"user","content":"`+msg+`"}]}`)
		if msg == "fail" {
			if a.status != http.StatusInternalServerError {
				t.Errorf("fail: status %d", a.status)
			}
			continue
		}
		got := a.body["choices"].([]any)[0].(map[string]any)["message"].(map[string]any)["content"]
		if a.status != http.StatusOK || got != "echo "+msg {
			t.Errorf("%s: %d %v", msg, a.status, got)
		}
	}
	if fake.Responded() != 3 || fake.Remaining() != 1 {
		t.Errorf("responded %d, remaining %d", fake.Responded(), fake.Remaining())
	}
	fake.Respond(nil)
	if a := post(t, url+"/chat/completions", "Bearer "+key, hello); a.status != http.StatusOK || fake.Remaining() != 0 {
		t.Errorf("back to the script: %d, remaining %d", a.status, fake.Remaining())
	}
}
