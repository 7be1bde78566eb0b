// Package offline is the model of the local stack, run only when named
// (LLM_MODE=offline): a small deterministic chat-completions server that runs
// in-process, so the real model client and agent loop run unchanged.
// Everything it writes is labelled as offline.
package offline

import (
	"encoding/json"
	"fmt"
	"strings"
)

const (
	// Model is the id the offline model answers with.
	Model = "offline-demo"
	// Label starts every answer it writes.
	Label = "[offline model] "
	// RunCodeTool and WebSearchTool are the tools it knows how to call,
	// when they are offered.
	RunCodeTool   = "commonly_run_code"
	WebSearchTool = "commonly_web_search"
)

// quoteRunes bounds how much of a tool result or prompt is quoted back.
const quoteRunes = 400

// message is the part of a request message the model reads.
type message struct {
	Role       string          `json:"role"`
	Content    json.RawMessage `json:"content"`
	ToolCalls  []wireToolCall  `json:"tool_calls"`
	ToolCallID string          `json:"tool_call_id"`
}

func (m message) text() string {
	var s string
	_ = json.Unmarshal(m.Content, &s)
	return s
}

type wireToolCall struct {
	ID       string       `json:"id"`
	Type     string       `json:"type"`
	Function wireFunction `json:"function"`
}

type wireFunction struct {
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

type tool struct {
	Function struct {
		Name string `json:"name"`
	} `json:"function"`
}

// reply is what the model decided to answer.
type reply struct {
	content string
	calls   []wireFunction
}

// respond decides the answer to a conversation: quote tool results when
// they are the latest messages, otherwise act on the latest user message.
func respond(msgs []message, tools []tool) reply {
	last := len(msgs) - 1
	switch {
	case last < 0:
		return reply{content: Label + "There is nothing to answer."}
	case msgs[last].Role == "tool":
		return answerToolResults(msgs)
	case msgs[last].Role == "user":
		return answerUser(msgs[last].text(), offered(tools))
	default:
		return reply{content: Label + "Nothing new to answer."}
	}
}

// answerUser calls a tool when the message asks for one that is offered,
// else answers briefly.
func answerUser(text string, can map[string]bool) reply {
	var r reply
	var said []string
	if b, ok := findCodeBlock(text); ok && can[RunCodeTool] {
		args, _ := json.Marshal(struct {
			Language string `json:"language"`
			Code     string `json:"code"`
		}{b.Language, b.Code})
		r.calls = append(r.calls, wireFunction{Name: RunCodeTool, Arguments: string(args)})
		said = append(said, fmt.Sprintf("running your %s code", b.Language))
	}
	if q, ok := findSearch(text); ok && can[WebSearchTool] {
		args, _ := json.Marshal(struct {
			Query string `json:"query"`
		}{q})
		r.calls = append(r.calls, wireFunction{Name: WebSearchTool, Arguments: string(args)})
		said = append(said, fmt.Sprintf("searching the web for %q", q))
	}
	if len(r.calls) > 0 {
		r.content = Label + "I am " + strings.Join(said, " and ") + "."
		return r
	}
	r.content = fmt.Sprintf(Label+"No language model is configured, so this is a fixed reply to: %q. "+
		"Send a ```python or ```js block to run code, or a line \"search: <query>\" to search the web.",
		quote(text, 80))
	return r
}

// answerToolResults quotes the trailing tool messages, naming each tool
// from the assistant message that called it.
func answerToolResults(msgs []message) reply {
	first := len(msgs)
	for first > 0 && msgs[first-1].Role == "tool" {
		first--
	}
	names := map[string]string{}
	if first > 0 {
		for _, tc := range msgs[first-1].ToolCalls {
			names[tc.ID] = tc.Function.Name
		}
	}
	var b strings.Builder
	b.WriteString(Label + "Here is what the tools returned.")
	for _, m := range msgs[first:] {
		name := names[m.ToolCallID]
		if name == "" {
			name = "tool"
		}
		fmt.Fprintf(&b, "\n%s: %s", name, quote(m.text(), quoteRunes))
	}
	return reply{content: b.String()}
}

func offered(tools []tool) map[string]bool {
	can := make(map[string]bool, len(tools))
	for _, t := range tools {
		can[t.Function.Name] = true
	}
	return can
}
