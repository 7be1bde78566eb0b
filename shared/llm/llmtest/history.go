package llmtest

import (
	"fmt"
	"strings"
)

// Texts of the upstream rejections, verbatim so that clients are tested
// against what the real APIs say.
const (
	// ReasoningDroppedMessage is DeepSeek's 400 when a thinking-mode
	// assistant tool-call message comes back without reasoning_content.
	ReasoningDroppedMessage = "The reasoning_content in the thinking mode must be passed back to the API."
	// OrphanToolMessage is OpenAI's 400 for a tool message that answers no
	// pending call (their spelling).
	OrphanToolMessage = "Invalid parameter: messages with role 'tool' must be a response to a preceeding message with 'tool_calls'."
	// MissingToolReplyMessage is OpenAI's 400 when a call has no tool
	// message; the ids follow.
	MissingToolReplyMessage = "An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. The following tool_call_ids did not have response messages: "
)

// issuedCall is a tool call the fake sent, to check it comes back as sent.
type issuedCall struct {
	name, arguments string
	// reasoning is the reasoning_content of the message that carried it.
	reasoning *string
}

// validate checks a request's history against the rules of reference §2
// and §6, given the calls this server issued. It returns the error text
// of the 400 to answer, or "".
func validate(req ChatRequest, issued map[string]issuedCall) string {
	if req.Model == "" {
		return "model is required"
	}
	if len(req.Messages) == 0 {
		return "messages must not be empty"
	}
	if len(req.ToolChoice) > 0 && len(req.Tools) == 0 {
		return "Invalid value for 'tool_choice': 'tool_choice' is only allowed when 'tools' are specified."
	}
	var pending []string // call ids awaiting a tool message, in order
	for i, m := range req.Messages {
		if m.Role == "tool" {
			at := indexOf(pending, m.ToolCallID)
			if m.ToolCallID == "" || at < 0 {
				return OrphanToolMessage
			}
			if len(m.Content) == 0 || m.Content[0] != '"' {
				return fmt.Sprintf("messages[%d].content must be a string", i)
			}
			pending = append(pending[:at], pending[at+1:]...)
			continue
		}
		if len(pending) > 0 {
			return MissingToolReplyMessage + strings.Join(pending, ", ")
		}
		switch m.Role {
		case "system", "user":
		case "assistant":
			for _, tc := range m.ToolCalls {
				if tc.ID == "" || indexOf(pending, tc.ID) >= 0 {
					return fmt.Sprintf("messages[%d].tool_calls: missing or duplicate id", i)
				}
				if sent, ok := issued[tc.ID]; ok {
					if sent.name != tc.Function.Name || sent.arguments != tc.Function.Arguments {
						return fmt.Sprintf("messages[%d].tool_calls: call %s was not echoed unchanged", i, tc.ID)
					}
					if sent.reasoning != nil && m.ReasoningContent == nil {
						return ReasoningDroppedMessage
					}
				}
				pending = append(pending, tc.ID)
			}
		default:
			return fmt.Sprintf("messages[%d].role %q is not supported", i, m.Role)
		}
	}
	if len(pending) > 0 {
		return MissingToolReplyMessage + strings.Join(pending, ", ")
	}
	return ""
}

func indexOf(ids []string, id string) int {
	for i, v := range ids {
		if v == id {
			return i
		}
	}
	return -1
}
