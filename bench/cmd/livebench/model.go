package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"
)

// pacedModel is a chat-completions server that streams every answer as
// a model writes it: a chunk of one word each gap, each word unique
// ("w0042 "), as LiteLLM sends them (reference: streaming-and-tracing.md
// §4, usage in a chunk of its own before [DONE]). It notes when each
// word left: the moment the chunk reaches the worker, over loopback.
type pacedModel struct {
	words int
	gap   time.Duration
	model string

	mu   sync.Mutex
	sent map[string]time.Time
}

func newPacedModel(words int, gap time.Duration, model string) *pacedModel {
	return &pacedModel{words: words, gap: gap, model: model, sent: map[string]time.Time{}}
}

// word is the i-th word of every answer.
func word(i int) string { return fmt.Sprintf("w%04d", i) }

// sentAt is when word w was last sent; false if it never was.
func (m *pacedModel) sentAt(w string) (time.Time, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	t, ok := m.sent[w]
	return t, ok
}

func (m *pacedModel) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	_, _ = io.Copy(io.Discard, r.Body)
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("x-litellm-call-id", "live-"+fmt.Sprint(time.Now().UnixNano()))
	flush := func() {
		if f, ok := w.(http.Flusher); ok {
			f.Flush()
		}
	}
	send := func(v any) bool {
		b, _ := json.Marshal(v)
		if _, err := fmt.Fprintf(w, "data: %s\n\n", b); err != nil {
			return false
		}
		flush()
		return true
	}
	chunk := func(delta map[string]any, finish any) map[string]any {
		return map[string]any{"id": "chatcmpl-live", "object": "chat.completion.chunk", "created": time.Now().Unix(), "model": m.model,
			"choices": []any{map[string]any{"index": 0, "delta": delta, "finish_reason": finish}}, "usage": nil}
	}
	if !send(chunk(map[string]any{"role": "assistant", "content": ""}, nil)) {
		return
	}
	for i := range m.words {
		t := time.NewTimer(m.gap)
		select {
		case <-r.Context().Done():
			t.Stop()
			return
		case <-t.C:
		}
		if !send(chunk(map[string]any{"content": word(i) + " "}, nil)) {
			return
		}
		m.mu.Lock()
		m.sent[word(i)] = time.Now()
		m.mu.Unlock()
	}
	usage := map[string]any{"prompt_tokens": 200, "completion_tokens": m.words, "total_tokens": 200 + m.words}
	if send(chunk(map[string]any{}, "stop")) && send(map[string]any{"id": "chatcmpl-live", "object": "chat.completion.chunk",
		"created": time.Now().Unix(), "model": m.model, "choices": []any{}, "usage": usage}) {
		_, _ = io.WriteString(w, "data: [DONE]\n\n")
		flush()
	}
}
