package app_test

import (
	"testing"

	"github.com/commonly/runtime/shared/llm/llmtest"
	"github.com/commonly/runtime/shared/sandbox/e2b/e2btest"
)

// The run record says which model and sandbox served it, so that a turn
// served by a demo mode cannot pass for a real one.
func TestRunSaysWhatServedIt(t *testing.T) {
	s := newStackWith(t, nil, llmtest.Text("hi"))
	s.install(t, `{"userId":"user-1","podId":"pod-1","agentName":"scout"}`)
	if run := s.turn(t, "hello"); run.Model != "deepseek-v4-flash" || run.Sandbox != "local" {
		t.Errorf("live model, local sandbox: model %q sandbox %q", run.Model, run.Sandbox)
	}
	s = newStackWith(t, e2bEnv(e2btest.Start(t)), llmtest.Text("hi"))
	s.install(t, `{"userId":"user-1","podId":"pod-1","agentName":"scout"}`)
	if run := s.turn(t, "hello"); run.Model != "deepseek-v4-flash" || run.Sandbox != "e2b" {
		t.Errorf("live model, E2B: model %q sandbox %q", run.Model, run.Sandbox)
	}
	s = newStackWith(t, map[string]string{"LLM_MODE": "offline", "LLM_BASE_URL": "", "LLM_API_KEY": ""})
	s.install(t, `{"userId":"user-1","podId":"pod-1","agentName":"scout"}`)
	if run := s.turn(t, "hello"); run.Model != "offline-demo" || run.Sandbox != "local" {
		t.Errorf("offline model: model %q sandbox %q", run.Model, run.Sandbox)
	}
}
