package agent

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/commonly/runtime/shared/llm"
	"github.com/commonly/runtime/shared/money"
	"github.com/commonly/runtime/shared/runs"
	"github.com/commonly/runtime/shared/textcap"
	"github.com/commonly/runtime/shared/tools"
)

// maxLoggedName bounds a tool name in records and logs: the name is the
// model's text, and an unknown one can be anything.
const maxLoggedName = 128

// dispatch runs one tool call of a model answer. Whatever happens short
// of ending the turn, exactly one tool message answers the call id, as
// the API requires before the next model call. A returned error ends the
// turn.
func (tr *turn) dispatch(ctx context.Context, step int, call llm.ToolCall) *Error {
	if ctx.Err() != nil {
		return interrupted(context.Cause(ctx))
	}
	started := tr.now()
	if e := tr.budget.beforeTool(started, spentBy(tr.run)); e != nil {
		return e
	}
	name := textcap.Bytes(call.Name, maxLoggedName)
	rec := runs.ToolCall{ID: call.ID, Name: name, Args: textcap.Bytes(call.Arguments, MaxRecordedArgs)}
	tr.toolStarted(step, rec)

	if n := tr.repeat.see(call.Name, call.Arguments); n >= tr.budget.limits.RepeatLimit {
		rec.Error = "not run: the same call was repeated"
		tr.record(step, rec)
		tr.toolFinished(step, rec, "repeated", rec.Error)
		return &Error{Kind: runs.ErrTurnCap, Message: fmt.Sprintf(
			"the model called tool %s with the same arguments %d times in a row", name, n)}
	}
	// The gate again: a model can name a tool it was not offered.
	tool, ok := tr.tools.Lookup(call.Name)
	if !ok {
		tr.refuse(step, rec, "not_available", fmt.Sprintf("tool %s is not available", name))
		return nil
	}
	args, err := parseArgs(call.Arguments)
	if err != nil {
		tr.refuse(step, rec, "invalid_arguments", fmt.Sprintf("invalid arguments for tool %s: %v", name, err))
		return nil
	}
	if msg, ok := tr.meteredFits(tool); !ok {
		tr.refuse(step, rec, "over_reservation", msg)
		return nil
	}
	env := tr.t.Env
	_, effectful := tool.(tools.Effectful)
	if effectful || billedPerCall(tool) {
		// A call that is billed per call or acts outside the runtime
		// starts from a durable record, so that a stopped attempt leaves
		// at most this call unrecorded (resume.go). A code run needs none:
		// its sandbox's whole life is priced when a takeover kills it.
		if tr.pending {
			if e := tr.checkpoint(ctx); e != nil {
				return e
			}
		}
		if effectful {
			env.IdempotencyKey = fmt.Sprintf("%s/%d/%s", tr.run.RunID, step, call.ID)
		}
	}

	callCtx, cancel := context.WithTimeout(tools.WithProgress(ctx, tr.progress(step, rec)), tr.budget.remaining(started))
	res := tool.Call(callCtx, env, args)
	cancel()
	rec.ElapsedMs = tr.now().Sub(started).Milliseconds()
	rec.CodeRun = res.CodeRun
	if res.Posted {
		tr.posted = true
		tr.run.PostedToPod = true
	}
	// Priced before anything else: a fatal or failed call still ran.
	if e := tr.chargeTool(res.Usage); e != nil {
		rec.Error = "not priced"
		tr.record(step, rec)
		tr.toolFinished(step, rec, "not_priced", rec.Error)
		return e
	}
	if f := res.Fatal; f != nil {
		// Not the model's to handle: it is not told, the turn ends. The
		// cause can quote a provider (E2B's error body): it goes to the
		// log, and the run keeps fixed words for its kind.
		e := fatalError(name, f)
		rec.Error = e.Message
		tr.record(step, rec)
		tr.toolFinished(step, rec, string(e.Kind), rec.Error)
		tr.log.Warn("tool call ended the turn", "step", step, "tool", name, "errorKind", e.Kind, "infrastructure", e.Infrastructure, "err", f.Err)
		return e
	}

	var content, kind string
	if res.Err != nil {
		msg := toolErrorText(name, res.Err)
		rec.Error = msg
		content = errContent(msg)
		// An error that chose its own log value (an outbound call's
		// status and cause) is logged with it; other tool errors can
		// quote the model's arguments and stay out of the logs.
		var detail slog.LogValuer
		if errors.As(res.Err, &detail) {
			tr.log.Warn("tool call failed", "step", step, "tool", name, "err", detail)
		}
	} else if c, err := okContent(res.Output); err != nil {
		tr.log.Error("tool output not encodable", "step", step, "tool", name, "error", err)
		rec.Error = fmt.Sprintf("tool %s returned output that could not be encoded", name)
		kind = "unencodable"
		content = errContent(rec.Error)
	} else {
		rec.OK = true
		content = c
	}
	tr.record(step, rec)
	tr.toolFinished(step, rec, kind, content)
	tr.reply(call.ID, content, res.Posted)
	return nil
}

// billedPerCall reports whether a call of t is billed for itself (a web
// search's query), beyond a sandbox's time.
func billedPerCall(t tools.Tool) bool {
	m, ok := t.(tools.Metered)
	return ok && m.NextCall().SearchQueries > 0
}

// fatalError is the turn's error for a tool failure that ends it, in
// fixed words for its kind.
func fatalError(name string, f *tools.FatalError) *Error {
	kind := cmp.Or(f.Kind, runs.ErrToolError)
	var what string
	switch kind {
	case runs.ErrSandbox:
		what = "the code sandbox failed or was lost"
	case runs.ErrTimeout:
		what = "the turn ran out of time"
	case runs.ErrInterrupted:
		what = "the turn was interrupted"
	default:
		what = "it could not complete"
	}
	return &Error{Kind: kind, Err: f, Infrastructure: f.Infrastructure, Message: fmt.Sprintf("tool %s failed: %s", name, what)}
}

// refuse answers a call that was not run.
func (tr *turn) refuse(step int, rec runs.ToolCall, kind, msg string) {
	rec.Error = msg
	tr.record(step, rec)
	tr.toolFinished(step, rec, kind, errContent(msg))
	tr.reply(rec.ID, errContent(msg), false)
}

func (tr *turn) record(step int, rec runs.ToolCall) {
	s := &tr.run.Steps[step]
	s.ToolCalls = append(s.ToolCalls, rec)
	tr.log.Info("tool call", "step", step, "tool", rec.Name, "elapsedMs", rec.ElapsedMs, "ok", rec.OK)
}

// reply answers a tool call as the model will see it, and journals it.
func (tr *turn) reply(callID, content string, posted bool) {
	tr.messages = append(tr.messages, llm.Message{Role: llm.RoleTool, ToolCallID: callID, Content: content})
	tr.journal(entry{Kind: entryTool, CallID: callID, Content: content, Posted: posted})
}

// toolErrorText is what the model and the record are told of a failed
// call; a deadline gets a plain sentence rather than Go's wording.
func toolErrorText(name string, err error) string {
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return fmt.Sprintf("tool %s timed out", name)
	case errors.Is(err, context.Canceled):
		return fmt.Sprintf("tool %s was cancelled", name)
	}
	return runs.TruncateError(err.Error())
}

// chargeTool prices a tool call's usage onto the run. Every part that can
// be priced is charged even when another fails.
func (tr *turn) chargeTool(u tools.Usage) *Error {
	add, err := tr.toolCost(u)
	tr.run.AddCost(add)
	if err != nil {
		return configError("pricing a tool call: %v", err)
	}
	return nil
}

// toolCost prices tool usage with the turn's providers: every part that
// can be priced, and what could not be, joined.
func (tr *turn) toolCost(u tools.Usage) (runs.Cost, error) {
	var add runs.Cost
	var errs []error
	charge := func(what, provider string, n int64, price func(string, int64) (money.Micros, error), into *money.Micros) {
		if n <= 0 {
			return
		}
		c, err := price(provider, n)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s on %q: %w", what, provider, err))
			return
		}
		*into = c
	}
	charge("search", tr.l.SearchProvider, u.SearchQueries, tr.l.Pricer.SearchCost, &add.SearchMicros)
	charge("sandbox", tr.l.SandboxProvider, u.SandboxMillis, tr.l.Pricer.SandboxCost, &add.SandboxMicros)
	return add, errors.Join(errs...)
}
