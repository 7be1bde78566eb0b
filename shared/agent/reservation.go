package agent

import (
	"fmt"

	"github.com/commonly/runtime/shared/money"
	"github.com/commonly/runtime/shared/runs"
	"github.com/commonly/runtime/shared/tools"
)

// Under a daily spend cap a turn runs on a reservation (Run.ReservedMicros,
// made at admission), and nothing it does may take its cost past it: the
// day's cost then never passes the cap (docs/money.md, "The spend cap").
// Each model call is sized to fit what the reservation has left, with a
// prompt counted by a bound that cannot be exceeded rather than an
// estimate, and each priced tool call is refused when its worst case
// would not fit. Without a reservation none of this runs: the turn's own
// bound (TURN_MAX_USD) is checked as it always was.

// MinCallOutputTokens is the least output cap worth a model call: below
// it the turn ends budget_cap rather than call for a truncated answer.
const MinCallOutputTokens = 256

// Bounds on what a chat template adds around the text (role markers,
// separators, the tools' framing). Generous: DeepSeek's and OpenAI's
// templates add under ten tokens a message.
const (
	templateTokensPerMessage = 16
	templateTokensPerTool    = 32
	templateTokensPerPrompt  = 64
)

// promptBound is a bound on the next prompt's tokens that the provider's
// count cannot exceed: a byte-level BPE token (DeepSeek's, OpenAI's
// tokenizers) covers at least one byte of the text it encodes, so the
// text's tokens are at most its bytes, plus what the template adds.
func (tr *turn) promptBound() int64 {
	return messageBytes(tr.messages) + tr.specBytes + templateTokensPerPrompt +
		templateTokensPerMessage*int64(len(tr.messages)) + templateTokensPerTool*int64(len(tr.specs))
}

// fitCall sizes the next model call to the reservation: the largest
// output cap, at most the configured one, whose worst case fits in what
// the reservation has left once the tools' outstanding usage is counted.
// Below MinCallOutputTokens the turn ends budget_cap.
func (tr *turn) fitCall(s spent) *Error {
	held, err := tr.toolsOutstanding(nil)
	if err != nil {
		return configError("pricing the tools' outstanding usage: %v", err)
	}
	left := tr.budget.limits.MaxCost - s.cost - held
	prompt := tr.promptBound()
	worst := func(out int64) (money.Micros, error) { return tr.l.Pricer.WorstCase(tr.model, prompt, out) }
	floor := min(int64(MinCallOutputTokens), tr.maxOut)
	w, err := worst(floor)
	if err != nil {
		return configError("pricing the next call to %s: %v", tr.model, err)
	}
	if w > left {
		return &Error{Kind: runs.ErrBudget, Message: fmt.Sprintf(
			"the turn's spend reservation of %s has %s left, less than the %s a call with a %d-token answer could cost",
			tr.budget.limits.MaxCost, max(left, 0), w, floor)}
	}
	// The largest cap that fits: worst is monotone in the output cap.
	lo, hi := floor, tr.maxOut
	for lo < hi {
		mid := lo + (hi-lo+1)/2
		w, err := worst(mid)
		if err != nil {
			return configError("pricing the next call to %s: %v", tr.model, err)
		}
		if w <= left {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	tr.callMaxOut = lo
	return nil
}

// toolsOutstanding prices what the offered metered tools may still add
// to the turn, and next's next call when next is set.
func (tr *turn) toolsOutstanding(next tools.Metered) (money.Micros, error) {
	var u tools.Usage
	for _, spec := range tr.specs {
		t, ok := tr.tools.Lookup(spec.Name)
		if !ok {
			continue
		}
		if m, ok := t.(tools.Metered); ok {
			o := m.Outstanding()
			u.SearchQueries += o.SearchQueries
			u.SandboxMillis += o.SandboxMillis
		}
	}
	if next != nil {
		n := next.NextCall()
		u.SearchQueries += n.SearchQueries
		u.SandboxMillis += n.SandboxMillis
	}
	c, err := tr.toolCost(u)
	if err != nil {
		return 0, err
	}
	return c.Total(), nil
}

// meteredFits says whether a metered tool's next call fits in the
// reservation, and if not the words the model and the record get.
func (tr *turn) meteredFits(t tools.Tool) (string, bool) {
	m, ok := t.(tools.Metered)
	if !ok || !tr.capped() {
		return "", true
	}
	worst, err := tr.toolsOutstanding(m)
	if err != nil {
		// Unpriced: the call would be refused by its pricing anyway.
		return "not run: its price is unknown", false
	}
	if s := spentBy(tr.run); s.cost+worst > tr.budget.limits.MaxCost {
		return "not run: the turn's spend reservation cannot cover this call; answer with what you have", false
	}
	return "", true
}
