package agent

import (
	"github.com/commonly/runtime/shared/llm"
	"github.com/commonly/runtime/shared/runs"
)

// onText passes a streamed call's text on as text.delta events of step
// (the run's event log coalesces them); nil when nothing listens.
func (tr *turn) onText(step int) func(string) {
	if !tr.l.Stream || tr.t.Events == nil {
		return nil
	}
	return func(text string) { tr.emit(runs.TextDelta{Step: step, Text: text}) }
}

// estimateMissingUsage prices an answer that came without usage (a proxy
// that lost it, streamed or not) from what was sent and what arrived, as
// a call whose answer never arrived is: never at zero. The step it is
// recorded as is marked estimated.
func (tr *turn) estimateMissingUsage(resp *llm.Response, prompt int64) *llm.Response {
	if resp == nil || !resp.UsageMissing {
		return resp
	}
	resp.Usage = llm.Usage{PromptTokens: prompt, CompletionTokens: EstimateTokens(answerBytes(resp.Message))}
	tr.log.Warn("the model's answer carried no usage; estimated", "promptTokens", prompt, "completionTokens", resp.Usage.CompletionTokens)
	return resp
}
