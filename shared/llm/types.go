// Package llm is the model client: OpenAI-compatible chat completions
// (LiteLLM in front of DeepSeek) through the official openai-go client.
package llm

import (
	"errors"
	"fmt"
	"log/slog"
)

// Roles of chat messages.
const (
	RoleSystem    = "system"
	RoleUser      = "user"
	RoleAssistant = "assistant"
	RoleTool      = "tool"
)

// Message is one chat message in the provider-neutral shape the loop keeps.
type Message struct {
	Role    string
	Content string
	// ToolCalls are set on assistant messages that call tools.
	ToolCalls []ToolCall
	// ToolCallID is set on tool messages.
	ToolCallID string
	// ReasoningContent is DeepSeek's thinking text. It is never shown or
	// concatenated into Content, but it is sent back on assistant messages
	// that made tool calls, as DeepSeek's thinking mode requires.
	ReasoningContent string
}

// ToolCall is one function call requested by the model. Arguments is the
// JSON-encoded string exactly as the model produced it (possibly invalid).
type ToolCall struct {
	ID        string
	Name      string
	Arguments string
}

// ToolSpec is a function offered to the model.
type ToolSpec struct {
	Name        string
	Description string
	// Parameters is a JSON Schema object.
	Parameters map[string]any
}

// Request is one chat-completions call.
type Request struct {
	Model     string
	Messages  []Message
	Tools     []ToolSpec
	User      string // the end user's id, for the proxy's per-user spend
	MaxTokens int64
	// Stream asks for the answer streamed (stream.go), with its usage;
	// OnText, optional, gets the answer's text as it arrives.
	Stream bool
	OnText func(text string)
}

// Usage is the token accounting of one call, normalised across the OpenAI
// and DeepSeek shapes: CachedPromptTokens = max(cached_tokens,
// prompt_cache_hit_tokens); CompletionTokens already includes reasoning.
type Usage struct {
	PromptTokens       int64
	CachedPromptTokens int64
	CompletionTokens   int64
}

// Response is the model's answer.
type Response struct {
	Message      Message // Role is assistant
	FinishReason string
	Usage        Usage
	// CallID is LiteLLM's x-litellm-call-id, kept for reconciliation.
	CallID string
	Model  string
	// UsageMissing: the answer carried no usage (a proxy that lost it),
	// so Usage is zero and the caller estimates it.
	UsageMissing bool
}

// Error kinds the loop maps to a run's errorKind.
var (
	// ErrGuardrail: the proxy refused the request as a guardrail, moderation
	// or prompt-injection block. Not retried; the body is not echoed.
	ErrGuardrail = errors.New("llm: blocked by guardrail")
	// ErrCall: any other failure of the call (status, transport, timeout,
	// malformed or empty answer).
	ErrCall = errors.New("llm: call failed")
)

// CallError carries detail for an ErrCall or ErrGuardrail. Message is
// this package's fixed words (with at most a status or a known finish
// reason), safe for the run record its owner reads; Detail is what the
// upstream said (an error body's message and type, a transport error),
// scrubbed of the client's key, for the log only (LogValue), where the
// function's log scrubs every configured secret again.
type CallError struct {
	Kind    error // ErrGuardrail or ErrCall
	Status  int   // HTTP status, 0 for transport errors
	Message string
	Detail  string
	// Billed is true when the call may have been billed (the request was
	// sent and the connection did not fail before it), so it must not be
	// retried automatically.
	Billed bool
	// Cut marks a stream that failed after its answer began; Received is
	// the bytes of answer it delivered (text, reasoning, tool calls), for
	// the estimate of its price.
	Cut      bool
	Received int64
}

func (e *CallError) Error() string {
	if e.Status != 0 {
		return fmt.Sprintf("%v: status %d: %s", e.Kind, e.Status, e.Message)
	}
	return fmt.Sprintf("%v: %s", e.Kind, e.Message)
}

func (e *CallError) Unwrap() error { return e.Kind }

// LogValue puts the upstream's detail beside the fixed words in logs.
func (e *CallError) LogValue() slog.Value {
	attrs := []slog.Attr{slog.String("msg", e.Error())}
	if e.Detail != "" {
		attrs = append(attrs, slog.String("detail", e.Detail))
	}
	if e.Billed {
		attrs = append(attrs, slog.Bool("billed", true))
	}
	return slog.GroupValue(attrs...)
}
