package llm_test

import (
	"errors"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/commonly/runtime/shared/llm"
	"github.com/commonly/runtime/shared/llm/llmtest"
)

// testKey looks like a real key so that redaction is exercised.
const testKey = "sk-test-9f8e7d6c5b4a39281706"

const testModel = "deepseek-v4-flash"

// start serves a fake with steps and returns a real client on it.
func start(t *testing.T, timeout time.Duration, steps ...llmtest.Step) (*llm.Client, *llmtest.Server) {
	t.Helper()
	fake := llmtest.NewServer(testKey, steps...)
	srv := httptest.NewServer(fake)
	t.Cleanup(srv.Close)
	c, err := llm.New(llm.Config{BaseURL: srv.URL + "/v1", APIKey: testKey, Timeout: timeout})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return c, fake
}

func userRequest(text string) llm.Request {
	return llm.Request{
		Model:    testModel,
		Messages: []llm.Message{{Role: llm.RoleSystem, Content: "You are terse."}, {Role: llm.RoleUser, Content: text}},
	}
}

var runCode = llm.ToolSpec{
	Name:        "commonly_run_code",
	Description: "Run Python or JavaScript",
	Parameters: map[string]any{
		"type":       "object",
		"properties": map[string]any{"language": map[string]any{"type": "string"}, "code": map[string]any{"type": "string"}},
		"required":   []any{"language", "code"},
	},
}

// callError asserts err is a *llm.CallError of kind.
func callError(t *testing.T, err error, kind error) *llm.CallError {
	t.Helper()
	var ce *llm.CallError
	if !errors.As(err, &ce) {
		t.Fatalf("error %v (%T) is not a *llm.CallError", err, err)
	}
	if !errors.Is(err, kind) {
		t.Fatalf("error %v is not %v", err, kind)
	}
	if len(ce.Message) > 1000 {
		t.Errorf("message is %d bytes, want ≤ 1000", len(ce.Message))
	}
	return ce
}

func ptr[T any](v T) *T { return &v }
