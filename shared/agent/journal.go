package agent

import (
	"encoding/json"
	"fmt"

	"github.com/commonly/runtime/shared/llm"
	"github.com/commonly/runtime/shared/runs"
)

// The turn's journal: what another worker needs to go on with the turn
// if this one stops (its opening, the system prompt and the user's
// message, is the install's and the run's) (a crash, a timeout, a lost execution environment).
// Each entry is appended as it happens and is durable with the run's next
// write (turns.Journal); before anything that is billed per call or acts
// outside the runtime, the loop makes everything appended durable first
// (sync), so that a stopped attempt's last unrecorded action is one
// known call, priced by an estimate (resume.go).

// Journal receives the turn's entries; *turns.runWriter (through
// turns.Journal) implements it. Optional: a turn without one cannot be
// resumed.
type Journal interface {
	Append(data string, run *runs.Run)
}

// Kinds of entries.
const (
	entryAnswer = "answer" // a model answer that calls tools, as received
	entryTool   = "tool"   // a tool call's result, as the model saw it
	entryFinal  = "final"  // the final answer, durable during its post
)

// entry is one journal entry, JSON-encoded.
type entry struct {
	Kind string `json:"kind"`
	Step int    `json:"step,omitempty"`
	// Message is an answer's assistant message.
	Message *message `json:"message,omitempty"`
	// CallID and Content are a tool result; Content is also the final
	// answer, Reason its finish reason.
	CallID  string `json:"callId,omitempty"`
	Content string `json:"content,omitempty"`
	Reason  string `json:"reason,omitempty"`
	// Posted: the tool posted to the pod.
	Posted bool `json:"posted,omitempty"`
	// Record and Cost are the final answer's step and its price by
	// part: the write that records the answer does not carry the run's
	// steps, so a takeover adds them from here.
	Record *runs.Step `json:"record,omitempty"`
	Cost   *runs.Cost `json:"cost,omitempty"`
}

// message is an llm.Message as the journal keeps it: with its own
// names, so that a change of the client's type never misreads an old
// journal.
type message struct {
	Role             string     `json:"role"`
	Content          string     `json:"content,omitempty"`
	ReasoningContent string     `json:"reasoningContent,omitempty"`
	ToolCalls        []toolCall `json:"toolCalls,omitempty"`
}

type toolCall struct {
	ID        string `json:"id"`
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

func toJournal(m llm.Message) *message {
	out := &message{Role: m.Role, Content: m.Content, ReasoningContent: m.ReasoningContent}
	for _, c := range m.ToolCalls {
		out.ToolCalls = append(out.ToolCalls, toolCall(c))
	}
	return out
}

func (m *message) llm() llm.Message {
	out := llm.Message{Role: m.Role, Content: m.Content, ReasoningContent: m.ReasoningContent}
	for _, c := range m.ToolCalls {
		out.ToolCalls = append(out.ToolCalls, llm.ToolCall(c))
	}
	return out
}

// journal appends e, with the run as it stands, and marks the turn as
// having entries no write has carried (pending).
func (tr *turn) journal(e entry) {
	if tr.t.Journal == nil {
		return
	}
	b, err := json.Marshal(e)
	if err != nil {
		// Plain strings and ints: this cannot fail.
		panic(fmt.Sprintf("agent: encode a journal entry: %v", err))
	}
	tr.t.Journal.Append(string(b), tr.run)
	tr.pending = true
}

func decodeEntry(data string) (entry, error) {
	var e entry
	if err := json.Unmarshal([]byte(data), &e); err != nil {
		return e, fmt.Errorf("journal entry: %w", err)
	}
	switch e.Kind {
	case entryTool, entryFinal:
	case entryAnswer:
		if e.Message == nil {
			return e, fmt.Errorf("journal entry: an answer without its message")
		}
	default:
		return e, fmt.Errorf("journal entry: unknown kind %q", e.Kind)
	}
	return e, nil
}
