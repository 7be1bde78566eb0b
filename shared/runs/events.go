package runs

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/commonly/runtime/shared/money"
)

// EventType names what happened in a run. The set is the contract of
// GET /v1/runs/{runId}/events (docs/api.md): clients switch on it.
type EventType string

const (
	EventRunStarted     EventType = "run.started"
	EventModelStarted   EventType = "model.started"
	EventModelFinished  EventType = "model.finished"
	EventTextDelta      EventType = "text.delta"
	EventToolStarted    EventType = "tool.started"
	EventToolOutput     EventType = "tool.output"
	EventToolFinished   EventType = "tool.finished"
	EventSandboxCreated EventType = "sandbox.created"
	EventSandboxKilled  EventType = "sandbox.killed"
	// EventRunResumed: the run's worker stopped mid-turn and another
	// attempt took it over; events go on after it with increasing ids.
	EventRunResumed EventType = "run.resumed"
	// EventRunFinished is always the last event. It is never stored: the
	// reader derives it from the final run (RunFinishedOf), so it says
	// what GET /v1/runs/{runId} says, whoever closed the run.
	EventRunFinished EventType = "run.finished"
)

// EventData is the payload of one event type.
type EventData interface {
	EventType() EventType
}

// Recorder receives a run's events as they happen. Record never blocks
// on I/O and never fails: events only show progress, the run is the
// record.
type Recorder interface {
	Record(d EventData)
}

// Record records d on r; a nil r records nothing, so an engine run
// without a reader (a test, the bench's own loop) needs no recorder.
func Record(r Recorder, d EventData) {
	if r != nil {
		r.Record(d)
	}
}

// StoredEvent is an event as the run keeps it: its id, increasing
// within the run from 1, its type and its data, the JSON object sent as
// the SSE data field (type, id and at included).
type StoredEvent struct {
	ID   int64
	Type EventType
	Data string
}

// EncodeEvents is a run's events as the run item keeps them: their data,
// one JSON object a line (JSON escapes line breaks inside strings), in
// one string attribute. One attribute rather than a list of maps: each
// write of the run carries it, and a list costs DynamoDB (and the SDK) an
// attribute value per field of every event.
func EncodeEvents(evs []StoredEvent) string {
	var n int
	for _, e := range evs {
		n += len(e.Data) + 1
	}
	var b strings.Builder
	b.Grow(n)
	for i, e := range evs {
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(e.Data)
	}
	return b.String()
}

// DecodeEvents reads back EncodeEvents; each line's id and type are its
// data's own.
func DecodeEvents(s string) ([]StoredEvent, error) {
	if s == "" {
		return nil, nil
	}
	lines := strings.Split(s, "\n")
	out := make([]StoredEvent, 0, len(lines))
	for i, line := range lines {
		var head struct {
			Type EventType `json:"type"`
			ID   int64     `json:"id"`
		}
		if err := json.Unmarshal([]byte(line), &head); err != nil || head.ID <= 0 || head.Type == "" {
			return nil, fmt.Errorf("event %d of the run is not an event", i)
		}
		out = append(out, StoredEvent{ID: head.ID, Type: head.Type, Data: line})
	}
	return out, nil
}

// RunStarted: the worker claimed the run. Model is the install's model
// when it names one; the model of each call is on model.started.
type RunStarted struct {
	Engine string `json:"engine"`
	Model  string `json:"model,omitempty"`
}

// ModelStarted: a model call was sent.
type ModelStarted struct {
	Step  int    `json:"step"`
	Model string `json:"model"`
}

// ModelFinished: a model call ended, priced as the run's step is.
type ModelFinished struct {
	Step               int          `json:"step"`
	Model              string       `json:"model"`
	PromptTokens       int64        `json:"promptTokens"`
	CachedPromptTokens int64        `json:"cachedPromptTokens"`
	CompletionTokens   int64        `json:"completionTokens"`
	CostMicros         money.Micros `json:"costMicros"`
	LatencyMs          int64        `json:"latencyMs"`
	FinishReason       string       `json:"finishReason,omitempty"`
	// Estimated: no usage arrived (a failed or cut call), so the tokens
	// are estimated from the request and what was received.
	Estimated bool `json:"estimated"`
	// ErrorKind is set when the call failed; the run ends with it.
	ErrorKind ErrorKind `json:"errorKind,omitempty"`
}

// TextDelta is answer text as the model writes it, coalesced.
type TextDelta struct {
	Step int    `json:"step"`
	Text string `json:"text"`
}

// ToolStarted: a tool call of the model is being handled. Args are as
// the run's tool call keeps them (capped).
type ToolStarted struct {
	Step   int    `json:"step"`
	CallID string `json:"callId"`
	Name   string `json:"name"`
	Args   string `json:"args"`
}

// ToolOutput is what a code run prints, as it prints it, coalesced:
// Stream is "stdout" or "stderr".
type ToolOutput struct {
	Step   int    `json:"step"`
	CallID string `json:"callId"`
	Stream string `json:"stream"`
	Text   string `json:"text"`
}

// ToolFinished: a tool call ended. OK, or ErrorKind says why not:
// not_available, invalid_arguments, over_reservation (the spend cap
// reservation cannot hold the call), repeated, not_priced, unencodable,
// the code run's exit kind (error, timeout, rejected, sandbox_lost),
// tool_error, or the run's error kind when the failure ended the turn.
// Output is what the model was told, cut to MaxEventOutput bytes.
type ToolFinished struct {
	Step       int    `json:"step"`
	CallID     string `json:"callId"`
	Name       string `json:"name"`
	OK         bool   `json:"ok"`
	ErrorKind  string `json:"errorKind,omitempty"`
	DurationMs int64  `json:"durationMs"`
	Output     string `json:"output"`
}

// SandboxCreated: the turn's code sandbox was created.
type SandboxCreated struct {
	SandboxID string `json:"sandboxId"`
	Provider  string `json:"provider"`
}

// SandboxKilled: the turn's sandbox was killed at turn end; OK false
// leaves it to the reaper.
type SandboxKilled struct {
	SandboxID string `json:"sandboxId"`
	OK        bool   `json:"ok"`
}

// RunResumed: Attempt took the run over from attempt Lost, whose worker
// stopped while doing InFlight (model, tool, post, none); LostMicros is
// what that attempt may have been billed beyond what it recorded. The
// stopped attempt's events before it stay; what follows is the resumed
// attempt's, and the answer is its own.
type RunResumed struct {
	Attempt    int          `json:"attempt"`
	Lost       int          `json:"lostAttempt"`
	InFlight   string       `json:"inFlight"`
	LostMicros money.Micros `json:"lostMicros"`
}

// RunFinished is the run's final state, with the names and values of
// GET /v1/runs/{runId}.
type RunFinished struct {
	Status       Status       `json:"status"`
	ErrorKind    ErrorKind    `json:"errorKind,omitempty"`
	ErrorMessage string       `json:"errorMessage,omitempty"`
	Model        string       `json:"model,omitempty"`
	Steps        int          `json:"steps"`
	Tokens       Tokens       `json:"tokens"`
	CostMicros   money.Micros `json:"costMicros"`
	Cost         Cost         `json:"cost"`
	FinalMessage string       `json:"finalMessage,omitempty"`
	PostedToPod  bool         `json:"postedToPod"`
	Refunded     bool         `json:"refunded"`
	CompletedAt  *time.Time   `json:"completedAt,omitempty"`
}

// RunFinishedOf is the run.finished payload of a final run.
func RunFinishedOf(r *Run) RunFinished {
	return RunFinished{
		Status: r.Status, ErrorKind: r.ErrorKind, ErrorMessage: r.ErrorMessage, Model: r.Model,
		Steps: len(r.Steps), Tokens: r.Tokens, CostMicros: r.CostMicros, Cost: r.Cost,
		FinalMessage: r.FinalMessage, PostedToPod: r.PostedToPod, Refunded: r.Refunded, CompletedAt: r.CompletedAt,
	}
}

// FinishedAt is when a final run's run.finished is stamped: its
// completedAt, or its last stored event's time when that is later (a
// sandbox killed after the final write's clock), so that times never go
// backwards in id order.
func FinishedAt(r *Run) time.Time {
	var at time.Time
	if r.CompletedAt != nil {
		at = *r.CompletedAt
	}
	if n := len(r.Events); n > 0 {
		if last := eventTime(r.Events[n-1].Data); last.After(at) {
			at = last
		}
	}
	return at
}

func (RunStarted) EventType() EventType     { return EventRunStarted }
func (ModelStarted) EventType() EventType   { return EventModelStarted }
func (ModelFinished) EventType() EventType  { return EventModelFinished }
func (TextDelta) EventType() EventType      { return EventTextDelta }
func (ToolStarted) EventType() EventType    { return EventToolStarted }
func (ToolOutput) EventType() EventType     { return EventToolOutput }
func (ToolFinished) EventType() EventType   { return EventToolFinished }
func (SandboxCreated) EventType() EventType { return EventSandboxCreated }
func (SandboxKilled) EventType() EventType  { return EventSandboxKilled }
func (RunFinished) EventType() EventType    { return EventRunFinished }
func (RunResumed) EventType() EventType     { return EventRunResumed }
