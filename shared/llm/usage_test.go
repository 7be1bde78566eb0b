package llm_test

import (
	"context"
	"testing"
	"time"

	"github.com/commonly/runtime/shared/llm"
	"github.com/commonly/runtime/shared/llm/llmtest"
)

func TestUsageShapes(t *testing.T) {
	cases := []struct {
		name  string
		usage llmtest.Usage
		want  llm.Usage
	}{
		{"OpenAI cached_tokens",
			llmtest.Usage{Shape: llmtest.OpenAIShape, Prompt: 1200, Cached: 1024, Completion: 80, Reasoning: 40},
			llm.Usage{PromptTokens: 1200, CachedPromptTokens: 1024, CompletionTokens: 80}},
		{"DeepSeek hit/miss",
			llmtest.Usage{Shape: llmtest.DeepSeekShape, Prompt: 1200, Cached: 1024, Completion: 80, Reasoning: 40},
			llm.Usage{PromptTokens: 1200, CachedPromptTokens: 1024, CompletionTokens: 80}},
		{"DeepSeek with prompt_tokens_details null",
			llmtest.Usage{Shape: llmtest.NullDetailsShape, Prompt: 500, Cached: 448, Completion: 7},
			llm.Usage{PromptTokens: 500, CachedPromptTokens: 448, CompletionTokens: 7}},
		{"no cache hit",
			llmtest.Usage{Shape: llmtest.DeepSeekShape, Prompt: 300, Completion: 20},
			llm.Usage{PromptTokens: 300, CompletionTokens: 20}},
		{"usage missing", llmtest.Usage{Shape: llmtest.NoUsage}, llm.Usage{}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, _ := start(t, 5*time.Second, llmtest.Text("ok").WithUsage(tc.usage))
			resp, err := c.Complete(context.Background(), userRequest("x"))
			if err != nil {
				t.Fatalf("Complete: %v", err)
			}
			// Reasoning tokens are inside completion_tokens, never added again.
			if resp.Usage != tc.want {
				t.Errorf("usage = %+v, want %+v", resp.Usage, tc.want)
			}
		})
	}
}
