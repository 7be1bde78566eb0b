package turnstack

import (
	"context"
	"encoding/json"

	"github.com/commonly/runtime/bench/internal/script"
	"github.com/commonly/runtime/shared/agent"
	"github.com/commonly/runtime/shared/engine/native"
	"github.com/commonly/runtime/shared/llm"
	"github.com/commonly/runtime/shared/tools"
)

// SystemPrompt is the native engine's default system prompt for an
// install, which the peer sends too so both sides' prompts match.
func SystemPrompt(agentName string) string { return native.DefaultSystemPrompt(agentName) }

// Noop is the benchmark's tool: it checks its arguments as every tool
// does and answers ok. The peer's tool does the same.
type Noop struct{}

// Spec implements tools.Tool.
func (Noop) Spec() llm.ToolSpec {
	return llm.ToolSpec{
		Name:        script.Tool,
		Description: "Does nothing and answers ok.",
		Parameters: map[string]any{
			"type":                 "object",
			"properties":           map[string]any{"step": map[string]any{"type": "integer"}},
			"required":             []string{"step"},
			"additionalProperties": false,
		},
	}
}

// Call implements tools.Tool.
func (Noop) Call(_ context.Context, _ tools.Env, args json.RawMessage) tools.Result {
	var a struct {
		Step int `json:"step"`
	}
	if err := tools.DecodeArgs(args, &a); err != nil {
		return tools.Result{Err: err}
	}
	return tools.Result{Output: "ok"}
}

// AcceptPoster takes the final answer as a pod backend that answers at
// once would: the post's network time is not the turn's own overhead.
type AcceptPoster struct{}

// Post implements agent.Poster.
func (AcceptPoster) Post(context.Context, tools.Env, string) error { return nil }

var (
	_ tools.Tool   = Noop{}
	_ agent.Poster = AcceptPoster{}
)
