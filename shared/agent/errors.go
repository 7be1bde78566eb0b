package agent

import (
	"context"
	"errors"
	"fmt"

	"github.com/commonly/runtime/shared/llm"
	"github.com/commonly/runtime/shared/runs"
)

// Error is why a turn did not succeed: the run's errorKind and
// errorMessage, and the cause for errors.Is. Message is stored on the run
// and shown to the run's owner: it is written here, in fixed words with at
// most a status or a count, never an upstream's text (which goes to the
// log, scrubbed).
type Error struct {
	Kind    runs.ErrorKind
	Message string
	Err     error
	// Infrastructure marks a failure that is ours or a provider's (an
	// outage, our configuration), not the user's input, the model's
	// answer or a bound. Whether it refunds the turn is runs.RefundDue's
	// decision, made once by the run's writer.
	Infrastructure bool
}

// Error is the record's view (kind and message); the cause is reachable
// with errors.Is and errors.As.
func (e *Error) Error() string { return fmt.Sprintf("%s: %s", e.Kind, e.Message) }

func (e *Error) Unwrap() error { return e.Err }

// status is the final status a run ends in for this error.
func (e *Error) status() runs.Status {
	if e.Kind == runs.ErrInterrupted {
		return runs.StatusInterrupted
	}
	return runs.StatusFailed
}

// Fixed messages: a guardrail's reason is the provider's and is not echoed.
const (
	msgGuardrail   = "the model provider refused the request (guardrail or moderation)"
	msgInterrupted = "the turn was interrupted before it finished"
	msgInternal    = "the turn failed with an internal error"
	msgModelFailed = "the model call failed"
)

// errLeave is the cause of a turn that stops without ending, its run left
// for another attempt to resume (TurnResult.Leave).
var errLeave = errors.New("agent: the run is left for another attempt")

func interrupted(cause error) *Error {
	return &Error{Kind: runs.ErrInterrupted, Message: msgInterrupted, Err: cause}
}

// configError is our own misconfiguration (a missing price, a bad
// setting): an infrastructure failure. Its words are ours.
func configError(format string, a ...any) *Error {
	err := fmt.Errorf(format, a...)
	return &Error{Kind: runs.ErrConfig, Message: runs.TruncateError(err.Error()), Err: err, Infrastructure: true}
}

// modelError maps a failed model call to the turn's error. turnCtx is the
// caller's context and callCtx the call's, which also carries the turn's
// wall-clock deadline. A transport failure, a timeout of the call or a
// 5xx is the provider's outage: an infrastructure failure (refunded only
// if no model call of the turn answered, runs.RefundDue).
func modelError(turnCtx, callCtx context.Context, err error, b budget) *Error {
	if turnCtx.Err() != nil {
		return interrupted(context.Cause(turnCtx))
	}
	if errors.Is(callCtx.Err(), context.DeadlineExceeded) {
		return b.timeoutError(err)
	}
	if errors.Is(err, llm.ErrGuardrail) {
		return &Error{Kind: runs.ErrGuardrailBlocked, Message: msgGuardrail, Err: err}
	}
	var ce *llm.CallError
	if errors.As(err, &ce) {
		infra := errors.Is(ce.Kind, llm.ErrCall) && (ce.Status == 0 || ce.Status >= 500)
		return &Error{Kind: runs.ErrLLM, Message: runs.TruncateError(ce.Error()), Err: err, Infrastructure: infra}
	}
	return &Error{Kind: runs.ErrLLM, Message: msgModelFailed, Err: err}
}
