package offline

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// piecesOf splits an answer into the pieces it is streamed in: a few
// words each, as a model's tokens arrive, the whole text kept.
func piecesOf(text string) []string {
	const wordsPerPiece = 3
	var pieces []string
	var b strings.Builder
	words := 0
	for i, r := range text {
		b.WriteRune(r)
		if r == ' ' || r == '\n' {
			words++
		}
		if words == wordsPerPiece || i+len(string(r)) == len(text) {
			pieces = append(pieces, b.String())
			b.Reset()
			words = 0
		}
	}
	return pieces
}

// stream writes an answer as chat.completion.chunk events (reference:
// streaming-and-tracing.md §4): the role, the text in pieces a Pace
// apart, each tool call whole, the finish reason, then the usage in a
// chunk of its own with no choices, and [DONE].
func (h *Handler) stream(w http.ResponseWriter, r *http.Request, n int, content string, calls []wireToolCall, finish string, u usage) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("x-litellm-call-id", "offline-"+strconv.Itoa(n))
	w.Header().Set("x-litellm-response-cost", "0")
	id := "chatcmpl-offline-" + strconv.Itoa(n)
	send := func(delta map[string]any, finish any, withUsage bool) bool {
		chunk := map[string]any{"id": id, "object": "chat.completion.chunk", "created": created, "model": Model}
		if withUsage {
			chunk["choices"], chunk["usage"] = []any{}, u
		} else {
			chunk["choices"] = []any{map[string]any{"index": 0, "delta": delta, "finish_reason": finish, "logprobs": nil}}
			chunk["usage"] = nil
		}
		b, _ := json.Marshal(chunk)
		if _, err := w.Write([]byte("data: " + string(b) + "\n\n")); err != nil {
			return false
		}
		if f, ok := w.(http.Flusher); ok {
			f.Flush()
		}
		return true
	}
	if !send(map[string]any{"role": "assistant", "content": ""}, nil, false) {
		return
	}
	for i, p := range piecesOf(content) {
		if i > 0 && h.Pace > 0 {
			t := time.NewTimer(h.Pace)
			select {
			case <-r.Context().Done():
				t.Stop()
				return
			case <-t.C:
			}
		}
		if !send(map[string]any{"content": p}, nil, false) {
			return
		}
	}
	for i, c := range calls {
		tc := map[string]any{"index": i, "id": c.ID, "type": "function", "function": map[string]any{"name": c.Function.Name, "arguments": c.Function.Arguments}}
		if !send(map[string]any{"tool_calls": []any{tc}}, nil, false) {
			return
		}
	}
	if send(map[string]any{}, finish, false) && send(nil, nil, true) {
		_, _ = w.Write([]byte("data: [DONE]\n\n"))
	}
}
