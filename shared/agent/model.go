package agent

import (
	"cmp"
	"context"
	"fmt"
	"time"

	"github.com/commonly/runtime/shared/llm"
	"github.com/commonly/runtime/shared/runs"
)

// beforeModel is the gate before every model call: cancellation, then the
// budget, then the money bound with the call's worst case. refund is set
// for a pricing failure before the first call (our configuration).
func (tr *turn) beforeModel(ctx context.Context) (e *Error, refund bool) {
	if ctx.Err() != nil {
		return interrupted(context.Cause(ctx)), false
	}
	s := spentBy(tr.run)
	if e := tr.budget.beforeModel(tr.now(), s); e != nil {
		return e, false
	}
	prompt := estimateTokens(messageBytes(tr.messages) + tr.specBytes)
	worst, err := tr.l.Pricer.WorstCase(tr.model, prompt, tr.maxOut)
	if err != nil {
		return configError("pricing the next call to %s: %v", tr.model, err), s.calls == 0
	}
	return tr.budget.affordable(s, worst), false
}

// callModel makes one model call under the turn's remaining wall time
// and records it as a step, priced at the time the call was made. A
// failed call that still returned a response (an abnormal 200 answer:
// the client returns both) was billed, so it is recorded as well before
// its error ends the turn.
func (tr *turn) callModel(ctx context.Context) (*llm.Response, *Error, bool) {
	index := len(tr.run.Steps)
	started := tr.now()
	callCtx, cancel := context.WithTimeout(ctx, tr.budget.remaining(started))
	defer cancel()
	resp, err := tr.l.Model.Complete(callCtx, llm.Request{
		Model:     tr.model,
		Messages:  tr.messages,
		Tools:     tr.specs,
		User:      tr.run.UserID,
		MaxTokens: tr.maxOut,
	})
	elapsed := tr.now().Sub(started).Milliseconds()
	if err == nil && resp == nil {
		err = fmt.Errorf("%w: no response", llm.ErrCall)
	}
	if err != nil {
		e, refund := modelError(ctx, callCtx, err, index == 0, tr.budget)
		attrs := []any{"step", index, "elapsedMs", elapsed, "errorKind", e.Kind, "refund", refund}
		if resp != nil {
			step, perr := tr.recordStep(index, started, elapsed, resp)
			attrs = append(attrs, "finishReason", resp.FinishReason, "promptTokens", step.PromptTokens,
				"completionTokens", step.CompletionTokens, "costMicros", int64(step.CostMicros))
			if perr != nil {
				// The call's own error ends the turn; its tokens are on
				// the run, so it can be repriced.
				tr.log.Error("pricing a failed model call", "step", index, "model", tr.model, "error", perr)
			}
		}
		tr.log.Warn("model call failed", attrs...)
		return nil, e, refund
	}

	step, perr := tr.recordStep(index, started, elapsed, resp)
	tr.log.Info("model call", "step", index, "elapsedMs", elapsed, "finishReason", resp.FinishReason,
		"promptTokens", step.PromptTokens, "completionTokens", step.CompletionTokens,
		"toolCalls", len(resp.Message.ToolCalls), "costMicros", int64(step.CostMicros))
	if perr != nil {
		// The tokens are on the run, so the call can be repriced; a turn
		// is never recorded as free because its price was unknown.
		return nil, configError("pricing call %d to %s: %v", index, tr.model, perr), false
	}
	return resp, nil, false
}

// recordStep records a billed model call as step index of the run: its
// tokens on the step and the run's totals, and its price at started on
// both. The step is recorded even when it cannot be priced; the pricing
// error is returned.
func (tr *turn) recordStep(index int, started time.Time, elapsed int64, resp *llm.Response) (runs.Step, error) {
	u := resp.Usage
	step := runs.Step{
		Index:              index,
		Model:              cmp.Or(resp.Model, tr.model),
		CallID:             resp.CallID,
		PromptTokens:       u.PromptTokens,
		CachedPromptTokens: u.CachedPromptTokens,
		CompletionTokens:   u.CompletionTokens,
		FinishReason:       resp.FinishReason,
		ElapsedMs:          elapsed,
	}
	tr.run.Tokens.Add(u.PromptTokens, u.CachedPromptTokens, u.CompletionTokens)
	// Priced under the configured name: the proxy may report the
	// upstream model's own name, which the price table does not key.
	cost, perr := tr.l.Pricer.ModelCost(tr.model, started, u)
	if perr == nil {
		step.CostMicros = cost
	}
	tr.run.Steps = append(tr.run.Steps, step)
	tr.run.AddCost(runs.Cost{ModelMicros: step.CostMicros})
	return step, perr
}
