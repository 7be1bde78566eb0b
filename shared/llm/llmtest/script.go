package llmtest

import "net/http"

// Step is one scripted answer. The zero Step is invalid; build steps with
// Text, Calls, or one of the faults, then adjust fields.
type Step struct {
	// Text is the answer's content.
	Text string
	// ToolCalls are returned in one assistant message (several = parallel
	// calls). Arguments are sent verbatim, so they may be malformed.
	ToolCalls []ToolCall
	// Reasoning, when set, is sent as reasoning_content (DeepSeek
	// thinking), and later requests must send it back on the assistant
	// message that made these tool calls.
	Reasoning *string
	// FinishReason overrides "stop" / "tool_calls".
	FinishReason string
	// Usage overrides DefaultUsage.
	Usage *Usage
	// CallID overrides the generated x-litellm-call-id.
	CallID string

	// Faults: at most one of the following.

	// Error answers with this status and LiteLLM error body.
	Error *ErrorReply
	// Hang holds the request until the client gives up (or HangLimit).
	Hang bool
	// EmptyChoices answers 200 with "choices": [].
	EmptyChoices bool

	// Streamed answers only.

	// CutAfter > 0 aborts the stream after that many chunks (no usage,
	// no [DONE]).
	CutAfter int
	// UsageOnChoice sends the usage on the finish chunk instead of a
	// chunk of its own.
	UsageOnChoice bool
}

// ToolCall is a scripted call; an empty ID is generated.
type ToolCall struct {
	ID        string
	Name      string
	Arguments string
}

// ErrorReply is an error answer in LiteLLM's shape.
type ErrorReply struct {
	Status int
	// Message is encoded as error.message: a string, or an object for
	// guardrail blocks.
	Message any
	// Type is error.type; empty encodes null.
	Type   string
	Header http.Header
}

// UsageShape selects how usage is reported (reference §4).
type UsageShape int

const (
	// OpenAIShape: prompt_tokens_details.cached_tokens.
	OpenAIShape UsageShape = iota
	// DeepSeekShape: prompt_cache_hit_tokens / prompt_cache_miss_tokens.
	DeepSeekShape
	// NullDetailsShape: DeepSeek fields with prompt_tokens_details: null,
	// as LiteLLM sends for DeepSeek (LiteLLM #16009).
	NullDetailsShape
	// NoUsage omits the usage object.
	NoUsage
)

// Usage is the token accounting a step reports.
type Usage struct {
	Shape      UsageShape
	Prompt     int64
	Cached     int64
	Completion int64
	// Reasoning is reported in completion_tokens_details; it is already
	// part of Completion.
	Reasoning int64
}

// DefaultUsage is reported by steps without Usage.
var DefaultUsage = Usage{Shape: OpenAIShape, Prompt: 120, Completion: 30}

// Text answers with content.
func Text(s string) Step { return Step{Text: s} }

// Calls answers with tool calls.
func Calls(calls ...ToolCall) Step { return Step{ToolCalls: calls} }

// Call is one tool call with generated id.
func Call(name, arguments string) ToolCall { return ToolCall{Name: name, Arguments: arguments} }

// RateLimited answers 429 as LiteLLM does, with a Retry-After that would
// invite an automatic retry.
func RateLimited() Step {
	return Step{Error: &ErrorReply{
		Status:  http.StatusTooManyRequests,
		Message: "litellm.RateLimitError: RateLimitError: DeepseekException - Rate limit reached for requests",
		Type:    "throttling_error",
		Header:  http.Header{"Retry-After": {"1"}},
	}}
}

// ServerError answers 500 or 503 as LiteLLM does.
func ServerError(status int) Step {
	msg := "litellm.InternalServerError: InternalServerError: DeepseekException - Internal server error"
	if status == http.StatusServiceUnavailable {
		msg = "litellm.ServiceUnavailableError: DeepseekException - Service is too busy, please try again later"
	}
	return Step{Error: &ErrorReply{Status: status, Message: msg}}
}

// Guardrail answers 400 with an object error.message, as LiteLLM's
// guardrails do; detail is quoted in the body as a blocked prompt would be.
func Guardrail(detail string) Step {
	return Step{Error: &ErrorReply{
		Status: http.StatusBadRequest,
		Message: map[string]any{
			"error":          "Violated guardrail policy",
			"guardrail_name": "prompt-injection-guard",
			"detected_text":  detail,
		},
		Type: "None",
	}}
}

// Hang holds the request past the client's timeout.
func Hang() Step { return Step{Hang: true} }

// EmptyChoices answers 200 with no choices.
func EmptyChoices() Step { return Step{EmptyChoices: true} }

// WithReasoning sets reasoning_content.
func (s Step) WithReasoning(r string) Step { s.Reasoning = &r; return s }

// WithUsage sets the reported usage.
func (s Step) WithUsage(u Usage) Step { s.Usage = &u; return s }

// WithFinish overrides finish_reason.
func (s Step) WithFinish(reason string) Step { s.FinishReason = reason; return s }
