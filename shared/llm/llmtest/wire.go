package llmtest

import "encoding/json"

// ChatRequest is a decoded chat-completions request body (reference §2).
// Optional fields are pointers or raw JSON so that tests can tell an
// absent field from a zero one.
type ChatRequest struct {
	Model             string          `json:"model"`
	Messages          []ChatMessage   `json:"messages"`
	Tools             []Tool          `json:"tools,omitempty"`
	ToolChoice        json.RawMessage `json:"tool_choice,omitempty"`
	ParallelToolCalls *bool           `json:"parallel_tool_calls,omitempty"`
	MaxTokens         *int64          `json:"max_tokens,omitempty"`
	User              *string         `json:"user,omitempty"`
	Stream            bool            `json:"stream,omitempty"`
	// StreamOptions is nil when the field was absent.
	StreamOptions *struct {
		IncludeUsage bool `json:"include_usage"`
	} `json:"stream_options,omitempty"`
}

// ChatMessage is one message of a request.
type ChatMessage struct {
	Role string `json:"role"`
	// Content is raw: a string, null, or absent.
	Content    json.RawMessage `json:"content,omitempty"`
	ToolCalls  []WireToolCall  `json:"tool_calls,omitempty"`
	ToolCallID string          `json:"tool_call_id,omitempty"`
	// ReasoningContent is nil when the field was absent.
	ReasoningContent *string `json:"reasoning_content,omitempty"`
}

// Text is the message's content when it is a JSON string, else "".
func (m ChatMessage) Text() string {
	var s string
	if json.Unmarshal(m.Content, &s) != nil {
		return ""
	}
	return s
}

// Tool is one offered tool.
type Tool struct {
	Type     string `json:"type"`
	Function struct {
		Name        string         `json:"name"`
		Description string         `json:"description,omitempty"`
		Parameters  map[string]any `json:"parameters,omitempty"`
	} `json:"function"`
}

// WireToolCall is a tool call as it travels in both directions.
type WireToolCall struct {
	ID       string `json:"id"`
	Type     string `json:"type"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

// completion is a non-streaming response body (reference §3).
type completion struct {
	ID      string   `json:"id"`
	Object  string   `json:"object"`
	Created int64    `json:"created"`
	Model   string   `json:"model"`
	Choices []choice `json:"choices"`
	// Usage is pre-encoded so each shape can be emitted exactly.
	Usage json.RawMessage `json:"usage,omitempty"`
}

type choice struct {
	Index        int             `json:"index"`
	FinishReason string          `json:"finish_reason"`
	Message      responseMessage `json:"message"`
	Logprobs     *struct{}       `json:"logprobs"`
}

type responseMessage struct {
	Role string `json:"role"`
	// Content is null when the answer only calls tools.
	Content          *string        `json:"content"`
	ReasoningContent *string        `json:"reasoning_content,omitempty"`
	ToolCalls        []WireToolCall `json:"tool_calls,omitempty"`
}

// apiError is LiteLLM's error body: code is the status as a string, and
// message may be an object (guardrails).
type apiError struct {
	Error apiErrorDetail `json:"error"`
}

type apiErrorDetail struct {
	Message any     `json:"message"`
	Type    *string `json:"type"`
	Param   *string `json:"param"`
	Code    string  `json:"code"`
}
