package agent

import (
	"fmt"
	"time"

	"github.com/commonly/runtime/shared/money"
	"github.com/commonly/runtime/shared/runs"
)

// budget is the one set of bounds of a turn, checked before every model
// call and every tool call. It holds no counters: what was spent is read
// from the run, so the record and the bound can never disagree.
type budget struct {
	limits   Limits
	start    time.Time
	deadline time.Time
}

func newBudget(l Limits, start time.Time) budget {
	return budget{limits: l, start: start, deadline: start.Add(l.MaxWall)}
}

// spent is what a turn has consumed so far.
type spent struct {
	calls  int
	tokens int64
	cost   money.Micros
}

func spentBy(r *runs.Run) spent {
	return spent{calls: len(r.Steps) + r.LostModelCalls(), tokens: r.Tokens.Total, cost: r.Cost.Total()}
}

// remaining is the wall time left, never negative; it is the deadline of
// every call the turn makes.
func (b budget) remaining(now time.Time) time.Duration {
	return max(b.deadline.Sub(now), 0)
}

// beforeModel checks the bounds another model call would break whatever
// it costs; the money bound needs the call's worst case (affordable).
// Tokens stop at the cap, not past it: every call has a prompt, so one
// more call at the cap would exceed it.
func (b budget) beforeModel(now time.Time, s spent) *Error {
	if !now.Before(b.deadline) {
		return b.timeoutError(nil)
	}
	if s.calls >= b.limits.MaxModelCalls {
		return &Error{Kind: runs.ErrTurnCap, Message: fmt.Sprintf(
			"the turn reached its limit of %d model calls without a final answer", b.limits.MaxModelCalls)}
	}
	if s.tokens >= b.limits.MaxTokens {
		return b.tokenError(s.tokens)
	}
	return nil
}

// affordable stops the turn before a call whose worst-case price would
// take the turn's cost past MaxCost.
func (b budget) affordable(s spent, worst money.Micros) *Error {
	if s.cost+worst > b.limits.MaxCost {
		return &Error{Kind: runs.ErrBudget, Message: fmt.Sprintf(
			"the next model call could cost up to %s, which would take the turn's cost of %s past its limit of %s",
			worst, s.cost, b.limits.MaxCost)}
	}
	return nil
}

// beforeTool checks the bounds already broken: a tool adds no tokens and
// its price is not known in advance, so only the clock and overruns (a
// model answer past the token cap, a tool past the money cap) stop it.
// The model-call cap does not: the last call's tools still run, since a
// post tool is how a model may deliver its answer.
func (b budget) beforeTool(now time.Time, s spent) *Error {
	if !now.Before(b.deadline) {
		return b.timeoutError(nil)
	}
	if s.tokens > b.limits.MaxTokens {
		return b.tokenError(s.tokens)
	}
	if s.cost > b.limits.MaxCost {
		return &Error{Kind: runs.ErrBudget, Message: fmt.Sprintf(
			"the turn's cost of %s is past its limit of %s", s.cost, b.limits.MaxCost)}
	}
	return nil
}

func (b budget) timeoutError(cause error) *Error {
	return &Error{Kind: runs.ErrTimeout, Err: cause, Message: fmt.Sprintf(
		"the turn ran out of its %s wall-clock limit", b.limits.MaxWall)}
}

func (b budget) tokenError(used int64) *Error {
	return &Error{Kind: runs.ErrTokenCap, Message: fmt.Sprintf(
		"the turn used %d tokens, its limit is %d", used, b.limits.MaxTokens)}
}
