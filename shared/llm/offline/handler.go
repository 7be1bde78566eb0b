package offline

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// created is the fixed timestamp of every answer: the model is
// deterministic, its answers too.
const created = 1767225600

// Handler serves POST …/chat/completions as the offline model, whole or
// streamed ("stream": true, as LiteLLM streams: stream.go). It keeps the
// previous prompt to report prefix-cache hits, and a counter for call
// ids.
type Handler struct {
	// Pace is the pause between two pieces of a streamed answer.
	Pace       time.Duration
	mu         sync.Mutex
	calls      int
	prevPrompt string
}

// DefaultPace paces a streamed answer as a quick model writes, so that
// its text arrives in a few text.delta events, not at once.
const DefaultPace = 60 * time.Millisecond

// NewHandler returns a Handler with no history, at DefaultPace.
func NewHandler() *Handler { return &Handler{Pace: DefaultPace} }

type chatRequest struct {
	Messages []message `json:"messages"`
	Tools    []tool    `json:"tools"`
	Stream   bool      `json:"stream"`
}

// rawPrompt keeps the prompt's parts as sent, to size it.
type rawPrompt struct {
	Messages json.RawMessage `json:"messages"`
	Tools    json.RawMessage `json:"tools"`
}

func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !strings.HasSuffix(r.URL.Path, "/chat/completions") {
		writeError(w, http.StatusNotFound, "not found")
		return
	}
	if r.Method != http.MethodPost {
		writeError(w, http.StatusMethodNotAllowed, "method not allowed")
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, 8<<20))
	var req chatRequest
	var raw rawPrompt
	if err != nil || json.Unmarshal(body, &req) != nil || json.Unmarshal(body, &raw) != nil {
		writeError(w, http.StatusBadRequest, "request body is not valid JSON")
		return
	}
	if len(req.Messages) == 0 {
		writeError(w, http.StatusBadRequest, "messages must not be empty")
		return
	}

	rep := respond(req.Messages, req.Tools)
	// Tools precede messages, as in a provider's prompt, so that a stable
	// system prompt and tool list form the cached prefix.
	prompt := string(raw.Tools) + string(raw.Messages)
	h.mu.Lock()
	h.calls++
	n := h.calls
	cached := cachedTokens(h.prevPrompt, prompt)
	h.prevPrompt = prompt
	h.mu.Unlock()

	msg := map[string]any{"role": "assistant", "content": rep.content}
	completionText := rep.content
	finish := "stop"
	var calls []wireToolCall
	if len(rep.calls) > 0 {
		calls = make([]wireToolCall, len(rep.calls))
		for i, c := range rep.calls {
			calls[i] = wireToolCall{ID: fmt.Sprintf("offline-call-%d-%d", n, i), Type: "function", Function: c}
			completionText += c.Name + c.Arguments
		}
		msg["tool_calls"] = calls
		finish = "tool_calls"
	}
	usage := newUsage(estimateTokens(prompt), cached, max(1, estimateTokens(completionText)))
	if req.Stream {
		h.stream(w, r, n, rep.content, calls, finish, usage)
		return
	}
	resp := map[string]any{
		"id":      "chatcmpl-offline-" + strconv.Itoa(n),
		"object":  "chat.completion",
		"created": created,
		"model":   Model,
		"choices": []any{map[string]any{"index": 0, "finish_reason": finish, "message": msg, "logprobs": nil}},
		"usage":   usage,
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("x-litellm-call-id", "offline-"+strconv.Itoa(n))
	// Nothing is billed offline; the cost is computed from usage anyway.
	w.Header().Set("x-litellm-response-cost", "0")
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false) // answers quote code: keep <, > and & readable
	_ = enc.Encode(resp)
}

// writeError answers in the OpenAI/LiteLLM error shape.
func writeError(w http.ResponseWriter, status int, message string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{
		"message": message, "type": "invalid_request_error", "param": nil, "code": strconv.Itoa(status),
	}})
}
