package agent

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/commonly/runtime/shared/llm"
	"github.com/commonly/runtime/shared/runs"
	"github.com/commonly/runtime/shared/textcap"
)

// answerFinish reports the finish reasons of a complete answer. "length"
// is one: the answer hit the output cap but is the model's answer, and a
// capped answer serves the user better than none. Anything else without
// tool calls (content_filter, DeepSeek's insufficient_system_resource,
// values we do not know) is an abnormal ending.
func answerFinish(reason string) bool {
	switch reason {
	case "stop", "length", "tool_calls", "":
		return true
	}
	return false
}

// knownFinish is a finish reason as the run may name it: one of the
// values providers document, or "unknown" (the value itself is the
// upstream's text, and only logged).
func knownFinish(reason string) string {
	switch reason {
	case "stop", "length", "tool_calls", "content_filter", "insufficient_system_resource", "":
		return reason
	}
	return llm.FinishUnknown
}

// answer ends the turn on a model answer without tool calls.
//
// A failed post does not fail the turn: the answer exists and was paid
// for, so the run succeeds with its finalMessage and postedToPod=false,
// the error is logged and returned in TurnResult.PostErr for the caller's
// metrics. errorMessage stays empty, since clients read it with errorKind
// and a succeeded run has neither.
func (tr *turn) answer(ctx context.Context, content, reason string) TurnResult {
	if reason == "content_filter" {
		return tr.finish(&Error{Kind: runs.ErrGuardrailBlocked, Message: msgGuardrail})
	}
	empty := strings.TrimSpace(content) == ""
	switch {
	case empty && tr.posted:
		// The model answered through a post tool and has nothing to add.
	case empty:
		return tr.finish(&Error{Kind: runs.ErrLLM, Message: fmt.Sprintf(
			"the model returned an empty answer (finish reason %q)", knownFinish(reason))})
	case !answerFinish(reason):
		tr.log.Warn("abnormal finish reason", "finishReason", textcap.Bytes(reason, 64))
		return tr.finish(&Error{Kind: runs.ErrLLM, Message: fmt.Sprintf(
			"the model's answer ended abnormally (finish reason %q)", knownFinish(reason))})
	}
	// Journaled as every answer is, durable with the run's next write:
	// the events flush (turns.EventFlushDelay after it, while the post
	// goes on) or the final write, whichever comes first; no write of its
	// own before the post (issue 34 holds the turn's CPU to what it was).
	// An attempt that takes over once it is durable posts it again under
	// the same key, which the backend drops, rather than ask the model
	// for another; one stopped inside that window asks again (counted as
	// a repeat), and the backend still keeps the pod's first answer.
	// FinalMessage is set first, so that the write that makes the answer
	// durable also makes a cancel too late.
	tr.run.FinalMessage = content
	final := entry{Kind: entryFinal, Content: content, Reason: reason}
	if n := len(tr.run.Steps); n > 0 {
		step, cost := tr.run.Steps[n-1], tr.lastCost
		final.Record, final.Cost = &step, &cost
	}
	tr.journal(final)
	return tr.deliver(ctx, content)
}

// deliver posts the final answer, unless a post tool did, and ends the
// turn: a failed post does not fail it (answer's comment).
func (tr *turn) deliver(ctx context.Context, content string) TurnResult {
	tr.run.FinalMessage = content
	var postErr error
	if !tr.posted && strings.TrimSpace(content) != "" {
		postErr = tr.post(ctx, content)
	}
	out := tr.finish(nil)
	out.PostErr = postErr
	return out
}

// post delivers the final answer with at least PostGrace to do it, under
// the run's one key for it (every attempt posts it under the same).
func (tr *turn) post(ctx context.Context, content string) error {
	started := tr.now()
	pctx, cancel := context.WithTimeout(ctx, max(tr.budget.remaining(started), tr.budget.limits.PostGrace))
	defer cancel()
	env := tr.t.Env
	env.IdempotencyKey = tr.run.RunID + "/answer"
	err := tr.l.Poster.Post(pctx, env, content)
	elapsed := tr.now().Sub(started).Milliseconds()
	if err != nil {
		tr.log.Error("posting the final answer failed", "elapsedMs", elapsed, "error", err)
		return fmt.Errorf("post final answer: %w", err)
	}
	tr.run.PostedToPod = true
	tr.log.Info("posted the final answer", "elapsedMs", elapsed)
	return nil
}

// finish puts the run in its final status; e nil means succeeded. Every
// return of Run goes through here. A turn interrupted for a leave
// (TurnInput.Leave, or a checkpoint that could not be written) keeps its
// run open for another attempt.
func (tr *turn) finish(e *Error) TurnResult {
	r := tr.run
	if e != nil && e.Kind == runs.ErrInterrupted && tr.leaving(e) {
		tr.log.Info("turn left for another attempt", "steps", len(r.Steps), "costMicros", int64(r.CostMicros), "cause", e.Err)
		return TurnResult{Leave: true}
	}
	done := tr.now().UTC()
	attrs := []any{"steps", len(r.Steps), "tokens", r.Tokens.Total, "costMicros", int64(r.CostMicros),
		"elapsedMs", done.Sub(tr.budget.start).Milliseconds(), "postedToPod", r.PostedToPod}
	if e == nil {
		r.End(runs.StatusSucceeded, "", "", done)
		tr.log.Info("turn finished", append(attrs, "status", r.Status)...)
		return TurnResult{}
	}
	r.End(e.status(), e.Kind, e.Message, done)
	tr.log.Info("turn finished", append(attrs, "status", r.Status, "errorKind", e.Kind, "infrastructure", e.Infrastructure)...)
	return TurnResult{Infrastructure: e.Infrastructure, Err: e}
}

// leaving reports whether an interruption leaves the run for another
// attempt rather than ending it.
func (tr *turn) leaving(e *Error) bool {
	if errors.Is(e.Err, errLeave) {
		return true
	}
	if tr.t.Leave == nil || tr.ctx == nil || tr.ctx.Err() == nil {
		return false
	}
	return tr.t.Leave(context.Cause(tr.ctx))
}
