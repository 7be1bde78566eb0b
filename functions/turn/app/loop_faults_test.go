package app_test

import (
	"strings"
	"testing"

	"github.com/commonly/runtime/shared/llm/llmtest"
	"github.com/commonly/runtime/shared/runs"
)

// The loop through the real client against the scripted LiteLLM fake:
// malformed arguments, provider faults, timeouts and both usage shapes,
// each seen through the API as the run records it.
func TestLoopThroughTheRealClient(t *testing.T) {
	deepseek := llmtest.Usage{Shape: llmtest.DeepSeekShape, Prompt: 1200, Cached: 1024, Completion: 80}
	openai := llmtest.Usage{Shape: llmtest.OpenAIShape, Prompt: 1000, Cached: 512, Completion: 50}
	nulls := llmtest.Usage{Shape: llmtest.NullDetailsShape, Prompt: 900, Completion: 40}
	cases := []struct {
		name     string
		env      map[string]string
		steps    []llmtest.Step
		status   runs.Status
		kind     runs.ErrorKind
		refunded bool
		check    func(t *testing.T, s *stack, run runs.Run)
	}{
		{
			name: "malformed arguments go back to the model",
			steps: []llmtest.Step{
				llmtest.Calls(llmtest.Call("commonly_post_message", `{"content": "unterminated`)),
				llmtest.Text("sorry, done"),
			},
			status: runs.StatusSucceeded,
			check: func(t *testing.T, s *stack, run runs.Run) {
				tc := run.Steps[0].ToolCalls[0]
				if tc.OK || tc.Error == "" || len(s.pod.Messages("pod-1")) != 1 {
					// the one message is the final answer, posted by the loop
					t.Errorf("tool call = %+v, pod = %+v", tc, s.pod.Messages("pod-1"))
				}
				msgs := s.llm.Requests()[1].Body.Messages
				if last := msgs[len(msgs)-1].Text(); !strings.Contains(last, `"ok":false`) {
					t.Errorf("the model was not told: %q", last)
				}
			},
		},
		{
			name:     "rate limited on the first call",
			steps:    []llmtest.Step{llmtest.RateLimited()},
			status:   runs.StatusFailed,
			kind:     runs.ErrLLM,
			refunded: false, // the proxy answered: a 429 is not an outage of ours
		},
		{
			name:     "server error on the first call is refunded",
			steps:    []llmtest.Step{llmtest.ServerError(503)},
			status:   runs.StatusFailed,
			kind:     runs.ErrLLM,
			refunded: true,
		},
		{
			name:     "a hung call times out at LLM_TIMEOUT",
			env:      map[string]string{"LLM_TIMEOUT": "300ms"},
			steps:    []llmtest.Step{llmtest.Hang()},
			status:   runs.StatusFailed,
			kind:     runs.ErrLLM,
			refunded: true,
		},
		{
			name:   "an empty completion is a model error",
			steps:  []llmtest.Step{llmtest.EmptyChoices()},
			status: runs.StatusFailed,
			kind:   runs.ErrLLM,
		},
		{
			name: "both usage shapes count cached tokens",
			steps: []llmtest.Step{
				llmtest.Calls(llmtest.Call("commonly_read_memory", `{}`)).WithUsage(deepseek),
				llmtest.Calls(llmtest.Call("commonly_read_memory", `{}`)).WithUsage(openai),
				llmtest.Text("done").WithUsage(nulls),
			},
			status: runs.StatusSucceeded,
			check: func(t *testing.T, s *stack, run runs.Run) {
				if run.Tokens.Prompt != 3100 || run.Tokens.CachedPrompt != 1536 || run.Tokens.Completion != 170 {
					t.Errorf("tokens = %+v", run.Tokens)
				}
				if run.Steps[0].CachedPromptTokens != 1024 || run.Steps[1].CachedPromptTokens != 512 || run.Steps[2].CachedPromptTokens != 0 {
					t.Errorf("steps = %+v", run.Steps)
				}
			},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := newStackWith(t, c.env, c.steps...)
			s.install(t, `{"userId":"user-1","podId":"pod-1","agentName":"scout"}`)
			run := s.turn(t, "go")
			if run.Status != c.status || run.ErrorKind != c.kind || run.Refunded != c.refunded {
				t.Fatalf("run = %s %s refunded=%v %q", run.Status, run.ErrorKind, run.Refunded, run.ErrorMessage)
			}
			if s.llm.Count() != len(c.steps) {
				t.Errorf("%d model requests for %d scripted steps (no automatic retries)", s.llm.Count(), len(c.steps))
			}
			if strings.Contains(run.ErrorMessage, llmKey) {
				t.Error("the API key reached the run")
			}
			if c.check != nil {
				c.check(t, s, run)
			}
		})
	}
}
