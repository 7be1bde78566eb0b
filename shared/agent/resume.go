package agent

import (
	"context"
	"fmt"
	"time"

	"github.com/commonly/runtime/shared/llm"
	"github.com/commonly/runtime/shared/money"
	"github.com/commonly/runtime/shared/runs"
	"github.com/commonly/runtime/shared/tools"
)

// A turn taken over from an attempt that stopped goes on from its
// journal: every model answer and tool result recorded there is used as
// it was, never asked for again. What the stopped attempt did after its
// last durable write is one action at most (the loop syncs before each
// billed or outward one): a model call, a tool call or the final post.
// That action is done again, and what the stopped attempt may have been
// billed for it is priced by an estimate never below what a provider can
// have billed, recorded as a lost attempt (runs.LostAttempt) in its own
// part of the run's cost (Cost.LostMicros).

// Resume is what a turn taken over from a stopped attempt starts from.
type Resume struct {
	// Entries are the journal's entries, in order, as the stopped
	// attempt's last write left them.
	Entries []string
	// Lost is the stopped attempt as the worker found it (its number,
	// last write, the takeover's time); the loop prices it.
	Lost runs.LostAttempt
	// SandboxMillis is the billed life of the stopped attempt's sandboxes
	// beyond their recorded runs (the engine killed them).
	SandboxMillis int64
	// Worked is the run's working time over the earlier attempts: the
	// time bound counts it, not the wait between attempts.
	Worked time.Duration
}

// resumePoint is where a resumed turn goes on.
type resumePoint struct {
	// final is the final answer, made durable by a write during its post.
	final *entry
	// step and calls are the last answer's tool calls not answered yet.
	step  int
	calls []llm.ToolCall
}

// restore rebuilds the conversation from the journal, after its opening
// (the install's system prompt and the run's message, as a new turn
// opens), and says where the turn goes on.
func (tr *turn) restore(r *Resume) (resumePoint, error) {
	var p resumePoint
	tr.messages = opening(tr.t.System, tr.t.Message)
	for i, data := range r.Entries {
		e, err := decodeEntry(data)
		if err != nil {
			return p, fmt.Errorf("entry %d: %w", i, err)
		}
		switch e.Kind {
		case entryAnswer:
			m := e.Message.llm()
			tr.messages = append(tr.messages, m)
			p = resumePoint{step: e.Step, calls: m.ToolCalls}
		case entryTool:
			if len(p.calls) == 0 || p.calls[0].ID != e.CallID {
				return p, fmt.Errorf("entry %d: a result for call %q, which no answer is waiting for", i, e.CallID)
			}
			tr.repeat.see(p.calls[0].Name, p.calls[0].Arguments)
			p.calls = p.calls[1:]
			tr.messages = append(tr.messages, llm.Message{Role: llm.RoleTool, ToolCallID: e.CallID, Content: e.Content})
			tr.posted = tr.posted || e.Posted
		case entryFinal:
			p.final = &e
			if r := e.Record; r != nil && r.Index >= len(tr.run.Steps) && e.Cost != nil {
				// Recorded with the answer, not on the run yet.
				tr.run.Steps = append(tr.run.Steps, *r)
				tr.run.Tokens.Add(r.PromptTokens, r.CachedPromptTokens, r.CompletionTokens)
				tr.run.AddCost(*e.Cost)
			}
		}
	}
	return p, nil
}

// opening is a conversation's first messages.
func opening(system, user string) []llm.Message {
	var msgs []llm.Message
	if system != "" {
		msgs = append(msgs, llm.Message{Role: llm.RoleSystem, Content: system})
	}
	return append(msgs, llm.Message{Role: llm.RoleUser, Content: user})
}

// resumed prices the stopped attempt from where its journal ends, records
// it on the run with a run.resumed event, and makes that durable before
// anything this attempt does is billed. ok false ends Run with out: the
// record could not be made durable, so nothing runs.
func (tr *turn) resumed(ctx context.Context, p resumePoint) (out TurnResult, ok bool) {
	lost, err := tr.priceLost(p)
	if err != nil {
		return tr.finish(configError("pricing the stopped attempt: %v", err)), false
	}
	tr.run.LostAttempts = append(tr.run.LostAttempts, lost)
	tr.run.AddCost(runs.Cost{LostMicros: lost.CostMicros})
	tr.emit(runs.RunResumed{Attempt: tr.run.Attempts, Lost: lost.Attempt, InFlight: lost.InFlight, LostMicros: lost.CostMicros})
	tr.log.Info("turn resumed", "lostAttempt", lost.Attempt, "inFlight", lost.InFlight, "lostMicros", int64(lost.CostMicros),
		"journalEntries", len(tr.t.Resume.Entries))
	if err := tr.sync(ctx); err != nil {
		tr.log.Warn("the resumed attempt's record could not be written; leaving the run for the next attempt", "error", err)
		return TurnResult{Leave: true}, false
	}
	return TurnResult{}, true
}

// priceLost is the stopped attempt with what it may have been billed
// beyond its journal: the action in flight at its end (at most one) and
// its sandboxes' life after their recorded runs.
func (tr *turn) priceLost(p resumePoint) (runs.LostAttempt, error) {
	r := tr.t.Resume
	lost := r.Lost
	lost.Estimated = true
	var cost money.Micros
	switch {
	case p.final != nil:
		// Posting is not billed.
		lost.InFlight = runs.InFlightPost
	case len(p.calls) > 0:
		lost.InFlight = runs.InFlightTool
		c, err := tr.inFlightTool(p.calls[0])
		if err != nil {
			return lost, err
		}
		cost += c
	default:
		s := spentBy(tr.run)
		if tr.budget.beforeModel(tr.now(), s) != nil {
			// No call was allowed: the attempt was ending.
			lost.InFlight = runs.InFlightNone
			break
		}
		if tr.capped() {
			// The same sizing the stopped attempt made, from the same state.
			if e := tr.fitCall(s); e != nil {
				lost.InFlight = runs.InFlightNone
				break
			}
		}
		lost.InFlight = runs.InFlightModel
		lost.PromptTokens, lost.CompletionTokens = tr.lostPrompt(), tr.callMaxOut
		c, err := tr.l.Pricer.WorstCase(tr.model, lost.PromptTokens, lost.CompletionTokens)
		if err != nil {
			return lost, err
		}
		cost += c
	}
	if r.SandboxMillis > 0 {
		c, err := tr.l.Pricer.SandboxCost(tr.l.SandboxProvider, r.SandboxMillis)
		if err != nil {
			return lost, err
		}
		lost.SandboxMillis = r.SandboxMillis
		cost += c
	}
	lost.CostMicros = cost
	return lost, nil
}

// inFlightTool is what a tool call in flight may have been billed, the
// sandbox's time aside (the sandbox's life is priced whole).
func (tr *turn) inFlightTool(call llm.ToolCall) (money.Micros, error) {
	t, ok := tr.tools.Lookup(call.Name)
	if !ok {
		return 0, nil
	}
	m, ok := t.(tools.Metered)
	if !ok {
		return 0, nil
	}
	u := m.NextCall()
	u.SandboxMillis = 0
	c, err := tr.toolCost(u)
	return c.Total(), err
}

// lostPrompt bounds the prompt of the model call the stopped attempt had
// in flight: the last answered call's counted prompt and answer, and
// what was added after them (its tool results) by their bytes, which a
// byte-level tokenizer cannot exceed; the whole conversation by its bytes
// when no call has answered yet.
func (tr *turn) lostPrompt() int64 {
	steps := tr.run.Steps
	last := len(tr.messages) - 1
	for last >= 0 && tr.messages[last].Role != llm.RoleAssistant {
		last--
	}
	if n := len(steps); n == 0 || steps[n-1].Estimated || last < 0 {
		return tr.promptBound()
	}
	s := steps[len(steps)-1]
	after := tr.messages[last+1:]
	return s.PromptTokens + s.CompletionTokens + messageBytes(after) +
		templateTokensPerMessage*int64(len(after)+1) + templateTokensPerPrompt
}
