package llmtest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
)

// chunk is one streamed chunk (reference §5).
type chunk struct {
	ID      string          `json:"id"`
	Object  string          `json:"object"`
	Created int64           `json:"created"`
	Model   string          `json:"model"`
	Choices []chunkChoice   `json:"choices"`
	Usage   json.RawMessage `json:"usage"`
}

type chunkChoice struct {
	Index        int     `json:"index"`
	Delta        delta   `json:"delta"`
	FinishReason *string `json:"finish_reason"`
}

type delta struct {
	Role             string          `json:"role,omitempty"`
	Content          *string         `json:"content,omitempty"`
	ReasoningContent *string         `json:"reasoning_content,omitempty"`
	ToolCalls        []deltaToolCall `json:"tool_calls,omitempty"`
}

type deltaToolCall struct {
	Index    int    `json:"index"`
	ID       string `json:"id,omitempty"`
	Type     string `json:"type,omitempty"`
	Function struct {
		Name      string `json:"name,omitempty"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

// streamChunks are the chunks of an answer as LiteLLM streams it: a
// keep-alive comment is the caller's; the role, the reasoning and text
// in pieces, each tool call's first fragment (id, name) then its
// arguments in two, the finish, and the usage in a chunk of its own with
// "choices": [] (or on the finish chunk, usageOnChoice), none when
// usage is nil.
func streamChunks(c completion, usageOnChoice bool) []chunk {
	base := func() chunk {
		return chunk{ID: c.ID, Object: "chat.completion.chunk", Created: c.Created, Model: c.Model, Choices: []chunkChoice{}, Usage: json.RawMessage("null")}
	}
	var out []chunk
	add := func(d delta, finish *string) {
		ch := base()
		ch.Choices = []chunkChoice{{Delta: d, FinishReason: finish}}
		out = append(out, ch)
	}
	if len(c.Choices) == 0 {
		ch := base()
		if c.Usage != nil {
			ch.Usage = c.Usage
		}
		return append(out, ch)
	}
	ch := c.Choices[0]
	empty := ""
	add(delta{Role: "assistant", Content: &empty}, nil)
	if r := ch.Message.ReasoningContent; r != nil && *r != "" {
		for _, p := range pieces(*r) {
			add(delta{ReasoningContent: &p}, nil)
		}
	}
	if t := ch.Message.Content; t != nil {
		for _, p := range pieces(*t) {
			add(delta{Content: &p}, nil)
		}
	}
	for i, tc := range ch.Message.ToolCalls {
		first := deltaToolCall{Index: i, ID: tc.ID, Type: "function"}
		first.Function.Name = tc.Function.Name
		add(delta{ToolCalls: []deltaToolCall{first}}, nil)
		half := len(tc.Function.Arguments) / 2
		for _, part := range []string{tc.Function.Arguments[:half], tc.Function.Arguments[half:]} {
			frag := deltaToolCall{Index: i}
			frag.Function.Arguments = part
			add(delta{ToolCalls: []deltaToolCall{frag}}, nil)
		}
	}
	finish := ch.FinishReason
	add(delta{}, &finish)
	switch {
	case c.Usage == nil:
	case usageOnChoice:
		out[len(out)-1].Usage = c.Usage
	default:
		u := base()
		u.Usage = c.Usage
		out = append(out, u)
	}
	return out
}

// pieces splits text after each space, as a model's tokens come.
func pieces(s string) []string {
	if s == "" {
		return nil
	}
	return strings.SplitAfter(s, " ")
}

// writeStream answers with the stream of c. cutAfter > 0 aborts the
// connection after that many chunks, as a proxy dying mid-answer does.
func writeStream(w http.ResponseWriter, c completion, step Step) int {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	flush := func() {
		if f, ok := w.(http.Flusher); ok {
			f.Flush()
		}
	}
	// DeepSeek's keep-alive while queued: a comment the client skips.
	fmt.Fprint(w, ": keep-alive\n\n")
	for i, ch := range streamChunks(c, step.UsageOnChoice) {
		if step.CutAfter > 0 && i == step.CutAfter {
			flush()
			panic(http.ErrAbortHandler)
		}
		b, _ := json.Marshal(ch)
		fmt.Fprintf(w, "data: %s\n\n", b)
		flush()
	}
	fmt.Fprint(w, "data: [DONE]\n\n")
	flush()
	return http.StatusOK
}

// StreamOf is the streamed form of a chat.completion body: the SSE body
// a proxy sends for the same answer with stream_options.include_usage,
// for fakes that script whole answers (the benchmarks' model).
func StreamOf(completionBody []byte) ([]byte, error) {
	var c completion
	if err := json.Unmarshal(completionBody, &c); err != nil {
		return nil, fmt.Errorf("llmtest: not a completion: %w", err)
	}
	var b strings.Builder
	for _, ch := range streamChunks(c, false) {
		j, err := json.Marshal(ch)
		if err != nil {
			return nil, err
		}
		fmt.Fprintf(&b, "data: %s\n\n", j)
	}
	b.WriteString("data: [DONE]\n\n")
	return []byte(b.String()), nil
}
