package pricing

import "github.com/commonly/runtime/shared/money"

// The smallest useful model call: a prompt of a system prompt, a
// message and a few tool results, and a whole default answer. A spend
// cap's reservation smaller than its worst case would let a turn start
// that could not make one such call.
const (
	UsefulPromptTokens = 8192
	UsefulOutputTokens = 2048
)

// MinUsefulCall is the worst case of the smallest useful call to model
// starting now (WorstCase): the least reservation worth admitting a
// turn with under a spend cap.
func (t *Table) MinUsefulCall(model string) (money.Micros, error) {
	return t.WorstCase(model, UsefulPromptTokens, UsefulOutputTokens)
}
