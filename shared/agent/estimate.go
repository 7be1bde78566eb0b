package agent

import (
	"encoding/json"

	"github.com/commonly/runtime/shared/llm"
)

// The money bound needs the next prompt's size before the model counts
// it. About four bytes of English or JSON make a token; the estimate
// counts everything the request carries, so it errs on the high side.

func specBytes(specs []llm.ToolSpec) int64 {
	var n int64
	for _, s := range specs {
		n += int64(len(s.Name) + len(s.Description))
		if p, err := json.Marshal(s.Parameters); err == nil {
			n += int64(len(p))
		}
	}
	return n
}

func messageBytes(msgs []llm.Message) int64 {
	var n int64
	for _, m := range msgs {
		n += int64(len(m.Role)+len(m.ToolCallID)) + answerBytes(m)
	}
	return n
}

// answerBytes is what a model writes in m: its content, its reasoning
// and its tool calls.
func answerBytes(m llm.Message) int64 {
	n := int64(len(m.Content) + len(m.ReasoningContent))
	for _, c := range m.ToolCalls {
		n += int64(len(c.ID) + len(c.Name) + len(c.Arguments))
	}
	return n
}

// EstimateTokens is the token count of bytes of text, rounded up: the
// one estimator for what a provider has not counted (a call whose answer
// never arrived, an engine that reported no usage).
func EstimateTokens(bytes int64) int64 { return (bytes + 3) / 4 }
