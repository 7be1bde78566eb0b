package llm

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"github.com/openai/openai-go/v3"

	"github.com/commonly/runtime/shared/textcap"
)

// CallIDHeader is LiteLLM's id of a call, kept for reconciliation.
const CallIDHeader = "x-litellm-call-id"

// Finish reasons the client accepts as normal endings; every other value
// (including DeepSeek's insufficient_system_resource and a missing one)
// is an abnormal ending.
const (
	finishStop          = "stop"
	finishToolCalls     = "tool_calls"
	finishLength        = "length"
	finishContentFilter = "content_filter"
	finishNoCapacity    = "insufficient_system_resource"
)

// FinishUnknown stands for a finish reason the client does not know,
// whose value is the upstream's text and is only logged.
const FinishUnknown = "unknown"

// decode turns a 200 answer into a Response, or a CallError when it is
// not a usable answer.
func (c *Client) decode(cc *openai.ChatCompletion, httpResp *http.Response) (*Response, error) {
	status := http.StatusOK
	var callID string
	if httpResp != nil {
		status = httpResp.StatusCode
		callID = httpResp.Header.Get(CallIDHeader)
	}
	if cc == nil {
		return nil, callError(ErrCall, status, "empty response body")
	}
	resp := &Response{
		CallID:       callID,
		Model:        cc.Model,
		Usage:        parseUsage(cc.JSON.Usage.Raw()),
		UsageMissing: !cc.JSON.Usage.Valid() || cc.JSON.Usage.Raw() == "null",
	}
	if len(cc.Choices) == 0 {
		return resp, callError(ErrCall, status, "response has no choices")
	}
	choice := cc.Choices[0]
	resp.FinishReason = choice.FinishReason
	resp.Message = Message{
		Role:    RoleAssistant,
		Content: choice.Message.Content,
		// Kept apart from Content: it is never shown as the answer.
		ReasoningContent: reasoningContent(choice.Message),
	}
	for _, tc := range choice.Message.ToolCalls {
		if tc.ID == "" || tc.Function.Name == "" {
			return resp, callError(ErrCall, status, "tool call without id or name")
		}
		resp.Message.ToolCalls = append(resp.Message.ToolCalls, ToolCall{
			ID:        tc.ID,
			Name:      tc.Function.Name,
			Arguments: tc.Function.Arguments,
		})
	}
	return resp, c.judge(resp, choice.FinishReason, choice.Message.Refusal, status)
}

// judge checks an answer's finish reason and content, streamed or not:
// nil for a usable answer, else the CallError the response goes with.
func (c *Client) judge(resp *Response, finish, refusal string, status int) error {
	switch finish {
	case finishStop, finishToolCalls:
	case finishContentFilter:
		return callError(ErrGuardrail, status, "answer withheld by the provider's content filter")
	case finishLength:
		return callError(ErrCall, status, "answer cut at the token limit (finish_reason length)")
	case finishNoCapacity:
		return callError(ErrCall, status, "answer cut for lack of provider capacity (finish_reason %s)", finishNoCapacity)
	default:
		// Not one we know: the value is the upstream's, for the log; the
		// response (and the step recorded from it) says only "unknown".
		e := callError(ErrCall, status, "abnormal finish_reason")
		e.Detail = "finish_reason " + textcap.Bytes(c.scrub(finish), 64)
		resp.FinishReason = FinishUnknown
		return e
	}
	if len(resp.Message.ToolCalls) == 0 && strings.TrimSpace(resp.Message.Content) == "" {
		if refusal != "" {
			// OpenAI's structured refusal: a policy refusal, not a fault.
			return callError(ErrGuardrail, status, "the model refused the request")
		}
		return callError(ErrCall, status, "empty completion: no content and no tool calls")
	}
	return nil
}

// callError is the error of an answer that arrived (billed) with status
// but is not a usable one.
func callError(kind error, status int, format string, a ...any) *CallError {
	return &CallError{Kind: kind, Status: status, Message: fmt.Sprintf(format, a...), Billed: true}
}

// reasoningContent reads DeepSeek's reasoning_content, which the SDK keeps
// among the message's unknown fields. Absent or null reads as "".
func reasoningContent(m openai.ChatCompletionMessage) string {
	f, ok := m.JSON.ExtraFields[reasoningField]
	if !ok {
		return ""
	}
	var s *string
	if err := json.Unmarshal([]byte(f.Raw()), &s); err != nil || s == nil {
		return ""
	}
	return *s
}
