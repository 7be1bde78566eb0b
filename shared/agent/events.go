package agent

import (
	"github.com/commonly/runtime/shared/runs"
	"github.com/commonly/runtime/shared/textcap"
	"github.com/commonly/runtime/shared/tools"
)

// Events of the loop for the run's event stream (runs/events.go). Each
// says what the run's record says, at the moment it happens.

func (tr *turn) emit(d runs.EventData) { runs.Record(tr.t.Events, d) }

// modelFinished is the event of a recorded step; kind is set when the
// call failed.
func (tr *turn) modelFinished(s runs.Step, kind runs.ErrorKind) {
	tr.emit(runs.ModelFinished{
		Step: s.Index, Model: s.Model, PromptTokens: s.PromptTokens, CachedPromptTokens: s.CachedPromptTokens,
		CompletionTokens: s.CompletionTokens, CostMicros: s.CostMicros, LatencyMs: s.ElapsedMs,
		FinishReason: s.FinishReason, Estimated: s.Estimated, ErrorKind: kind,
	})
}

// toolStarted announces a tool call with its arguments as the run keeps them.
func (tr *turn) toolStarted(step int, rec runs.ToolCall) {
	tr.emit(runs.ToolStarted{Step: step, CallID: rec.ID, Name: rec.Name, Args: rec.Args})
}

// progress is a tool call's events while it runs: its sandbox when one
// is created, what its code prints as it prints it (tool.output,
// coalesced by the run's event log).
func (tr *turn) progress(step int, rec runs.ToolCall) tools.Progress {
	return tools.Progress{
		Output: func(stream, text string) {
			tr.emit(runs.ToolOutput{Step: step, CallID: rec.ID, Stream: stream, Text: text})
		},
		SandboxCreated: tr.sandboxCreated,
	}
}

// sandboxCreated announces a sandbox, once.
func (tr *turn) sandboxCreated(id string) {
	tr.sandboxMu.Lock()
	seen := tr.sandboxSeen[id]
	if !seen {
		if tr.sandboxSeen == nil {
			tr.sandboxSeen = map[string]bool{}
		}
		tr.sandboxSeen[id] = true
	}
	tr.sandboxMu.Unlock()
	if !seen {
		tr.emit(runs.SandboxCreated{SandboxID: id, Provider: tr.l.SandboxProvider})
	}
}

// toolFinished ends a tool call's events; kind is empty when it went
// well, output what the model was told. A code run's sandbox not yet
// announced (a tool that does not report its progress) is, before it.
func (tr *turn) toolFinished(step int, rec runs.ToolCall, kind, output string) {
	if cr := rec.CodeRun; cr != nil && cr.SandboxID != "" {
		tr.sandboxCreated(cr.SandboxID)
	}
	// Code that failed in a sandbox that worked is a successful call on
	// the run's record; the event says the code failed.
	if cr := rec.CodeRun; kind == "" && cr != nil && cr.ExitKind != "" && cr.ExitKind != "ok" {
		kind = cr.ExitKind
	}
	if kind == "" && !rec.OK {
		kind = "tool_error"
	}
	tr.emit(runs.ToolFinished{Step: step, CallID: rec.ID, Name: rec.Name, OK: kind == "", ErrorKind: kind,
		DurationMs: rec.ElapsedMs, Output: textcap.Bytes(output, runs.MaxEventOutput)})
}
