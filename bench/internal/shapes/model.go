package shapes

import (
	"encoding/json"
	"net/http"
	"sync"
	"time"

	"github.com/commonly/runtime/shared/llm/llmtest"
	"github.com/commonly/runtime/shared/tools/runcode"
	"github.com/commonly/runtime/shared/tools/search"
)

// Respond is the scripted model (llmtest.Server.Respond): the first call
// of a turn that acts calls its tool, the next answers; a turn that does
// not act answers at once. Usage is billed as a provider counts it: the
// request's text over CharsPerToken (the tools' schemas included), the
// answer's tokens.
func Respond(req llmtest.ChatRequest) llmtest.Step {
	var s Shape
	found, tools := false, 0
	for _, m := range req.Messages {
		switch m.Role {
		case "user":
			if !found {
				s, found = shapeOf(m.Text())
			}
		case "tool":
			tools++
		}
	}
	if !found {
		return llmtest.Text("no shape in the message")
	}
	usage := llmtest.Usage{Shape: llmtest.OpenAIShape, Prompt: promptTokens(req)}
	if tools == 0 && s.Acts() {
		usage.Completion = 30
		return llmtest.Calls(toolCall(s)).WithUsage(usage)
	}
	usage.Completion = int64(s.AnswerTokens)
	return llmtest.Text(words(s.AnswerTokens)).WithUsage(usage)
}

// toolCall is the call a shape's turn makes before answering.
func toolCall(s Shape) llmtest.ToolCall {
	switch {
	case s.Code:
		return llmtest.Call(runcode.Name, mustJSON(map[string]string{"language": "python", "code": Program}))
	case s.Search:
		return llmtest.Call(search.Name, `{"query":"release plan latency cost errors","maxResults":5}`)
	}
	// The rest of the prompt (the system prompt, the message, the tools'
	// schemas, the call itself) is about baseTokens.
	return llmtest.Call(ContextToolName, mustJSON(map[string]int{"tokens": max(1, s.ContextTokens-baseTokens)}))
}

// baseTokens is a turn's prompt before it reads context: the answer
// shape's prompt.
const baseTokens = 820

func promptTokens(req llmtest.ChatRequest) int64 {
	n := 0
	for _, m := range req.Messages {
		n += len(m.Content)
		for _, tc := range m.ToolCalls {
			n += len(tc.Function.Arguments)
		}
	}
	for _, t := range req.Tools {
		b, _ := json.Marshal(t)
		n += len(b)
	}
	return int64(n / CharsPerToken)
}

func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err) // maps of strings and ints always encode
	}
	return string(b)
}

// Pacer serves the scripted model as a model streams: the first chunk
// after TimeToFirst, each later one Interval after the one before, so a
// turn waits for its model as it does in production and writes its run
// events (flushed every 250 ms while text streams) as often. It records
// how long each call took, from the request to its last byte, so the
// driver can subtract the model's time from a turn's wall.
type Pacer struct {
	Model        http.Handler
	TimeToFirst  time.Duration
	Interval     time.Duration
	mu           sync.Mutex
	calls        int
	modelElapsed time.Duration
}

// ModelTime is the calls served and their total time so far.
func (p *Pacer) ModelTime() (int, time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.calls, p.modelElapsed
}

func (p *Pacer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	pw := &pacedWriter{ResponseWriter: w, first: p.TimeToFirst, interval: p.Interval, start: start}
	p.Model.ServeHTTP(pw, r)
	if !pw.flushed {
		// A whole (not streamed) answer still takes the model's time.
		time.Sleep(time.Until(start.Add(p.TimeToFirst)))
	}
	p.mu.Lock()
	p.calls++
	p.modelElapsed += time.Since(start)
	p.mu.Unlock()
}

// pacedWriter holds each flush (llmtest flushes after each streamed
// chunk, the first with its keep-alive comment) until its time.
type pacedWriter struct {
	http.ResponseWriter
	first, interval time.Duration
	start           time.Time
	flushes         int
	flushed         bool
	next            time.Time
}

func (w *pacedWriter) Flush() {
	switch w.flushes {
	case 0:
		w.next = w.start.Add(w.first)
		time.Sleep(time.Until(w.next))
	default:
		w.next = w.next.Add(w.interval)
		time.Sleep(time.Until(w.next))
	}
	w.flushes++
	w.flushed = true
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}
