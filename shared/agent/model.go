package agent

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/commonly/runtime/shared/llm"
	"github.com/commonly/runtime/shared/runs"
)

// beforeModel is the gate before every model call: cancellation, then the
// budget, then the money bound with the call's worst case.
func (tr *turn) beforeModel(ctx context.Context) *Error {
	if ctx.Err() != nil {
		return interrupted(context.Cause(ctx))
	}
	s := spentBy(tr.run)
	if e := tr.budget.beforeModel(tr.now(), s); e != nil {
		return e
	}
	if tr.capped() {
		return tr.fitCall(s)
	}
	worst, err := tr.l.Pricer.WorstCase(tr.model, tr.promptEstimate(), tr.maxOut)
	if err != nil {
		return configError("pricing the next call to %s: %v", tr.model, err)
	}
	return tr.budget.affordable(s, worst)
}

// promptEstimate is the next call's prompt in tokens, from everything the
// request carries.
func (tr *turn) promptEstimate() int64 {
	return EstimateTokens(messageBytes(tr.messages) + tr.specBytes)
}

// callModel makes one model call under the turn's remaining wall time
// and records it as a step, priced at the time the call was made. A
// failed call may still have been billed: one that returned a response
// (an abnormal 200 answer: the client returns both) is recorded with its
// usage, and one whose answer never arrived after the request was sent
// (a timeout, a cut connection, a 5xx) with an estimate (estimatedStep),
// before its error ends the turn.
func (tr *turn) callModel(ctx context.Context) (*llm.Response, *Error) {
	index := len(tr.run.Steps)
	started := tr.now()
	prompt := tr.promptEstimate()
	callCtx, cancel := context.WithTimeout(ctx, tr.budget.remaining(started))
	defer cancel()
	tr.emit(runs.ModelStarted{Step: index, Model: tr.model})
	resp, err := tr.l.Model.Complete(callCtx, llm.Request{
		Model:     tr.model,
		Messages:  tr.messages,
		Tools:     tr.specs,
		User:      tr.run.UserID,
		MaxTokens: tr.callMaxOut,
		Stream:    tr.l.Stream,
		OnText:    tr.onText(index),
	})
	resp = tr.estimateMissingUsage(resp, prompt)
	elapsed := tr.now().Sub(started).Milliseconds()
	if err == nil && resp == nil {
		err = fmt.Errorf("%w: no response", llm.ErrCall)
	}
	if err != nil {
		e := modelError(ctx, callCtx, err, tr.budget)
		attrs := []any{"step", index, "elapsedMs", elapsed, "errorKind", e.Kind, "infrastructure", e.Infrastructure, "err", err}
		var step runs.Step
		var perr error
		recorded := true
		switch u, ok := billedUsage(err, prompt, tr.callMaxOut); {
		case resp != nil:
			step, perr = tr.recordStep(index, started, runs.Step{FinishReason: knownFinish(resp.FinishReason), CallID: resp.CallID, ElapsedMs: elapsed, Estimated: resp.UsageMissing}, resp.Model, resp.Usage)
			attrs = append(attrs, "finishReason", resp.FinishReason)
		case ok:
			step, perr = tr.recordStep(index, started, runs.Step{ElapsedMs: elapsed, Estimated: true}, "", u)
		default:
			recorded = false
		}
		if recorded {
			tr.modelFinished(step, e.Kind)
			attrs = append(attrs, "promptTokens", step.PromptTokens, "completionTokens", step.CompletionTokens,
				"costMicros", int64(step.CostMicros), "estimated", step.Estimated)
		}
		if perr != nil {
			// The call's own error ends the turn; its tokens are on the
			// run, so it can be repriced.
			tr.log.Error("pricing a failed model call", "step", index, "model", tr.model, "error", perr)
		}
		tr.log.Warn("model call failed", attrs...)
		return nil, e
	}

	step, perr := tr.recordStep(index, started, runs.Step{FinishReason: knownFinish(resp.FinishReason), CallID: resp.CallID, ElapsedMs: elapsed, Estimated: resp.UsageMissing}, resp.Model, resp.Usage)
	tr.modelFinished(step, "")
	tr.log.Info("model call", "step", index, "elapsedMs", elapsed, "finishReason", resp.FinishReason,
		"promptTokens", step.PromptTokens, "completionTokens", step.CompletionTokens,
		"toolCalls", len(resp.Message.ToolCalls), "costMicros", int64(step.CostMicros))
	if perr != nil {
		// The tokens are on the run, so the call can be repriced; a turn
		// is never recorded as free because its price was unknown.
		return nil, configError("pricing call %d to %s: %v", index, tr.model, perr)
	}
	return resp, nil
}

// billedUsage is what a failed call without a response may have been
// billed for, and whether it may have been billed at all: not when the
// client knows the request never left or was refused before generation
// (llm.CallError.Billed false). The prompt is the estimate of what was
// sent, all of it uncached. The output is assumed to be none when the
// proxy answered with an error status (it returned no generation), and
// the whole output cap when no answer arrived at all (a timeout, a cut
// connection, an unreadable body): the model may have generated to the
// cap, and a turn is never priced below what it may have cost.
func billedUsage(err error, prompt, maxOut int64) (llm.Usage, bool) {
	var ce *llm.CallError
	if errors.As(err, &ce) && !ce.Billed {
		return llm.Usage{}, false
	}
	if ce != nil && ce.Cut {
		// A stream cut mid-answer: what arrived was generated.
		return llm.Usage{PromptTokens: prompt, CompletionTokens: EstimateTokens(ce.Received)}, true
	}
	u := llm.Usage{PromptTokens: prompt, CompletionTokens: maxOut}
	if ce != nil && ce.Status != 0 && (ce.Status < 200 || ce.Status > 299) {
		u.CompletionTokens = 0
	}
	return u, true
}

// recordStep records a model call as step index of the run: step's
// call fields, the usage's tokens on the step and the run's totals, and
// its price at started on both. The step is recorded even when it cannot
// be priced; the pricing error is returned.
func (tr *turn) recordStep(index int, started time.Time, step runs.Step, model string, u llm.Usage) (runs.Step, error) {
	step.Index = index
	step.Model = cmp.Or(model, tr.model)
	step.PromptTokens, step.CachedPromptTokens, step.CompletionTokens = u.PromptTokens, u.CachedPromptTokens, u.CompletionTokens
	tr.run.Tokens.Add(u.PromptTokens, u.CachedPromptTokens, u.CompletionTokens)
	// Priced under the configured name: the proxy may report the
	// upstream model's own name, which the price table does not key.
	cost, perr := tr.l.Pricer.ModelCostParts(tr.model, started, u)
	if perr != nil {
		cost = runs.Cost{}
	}
	step.CostMicros = cost.ModelMicros
	tr.lastCost = cost
	tr.run.Steps = append(tr.run.Steps, step)
	tr.run.AddCost(cost)
	return step, perr
}
