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
// and shown to the run's owner, so it never carries credentials or
// internal detail beyond what the cause itself declares safe.
type Error struct {
	Kind    runs.ErrorKind
	Message string
	Err     error
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
)

func interrupted(cause error) *Error {
	return &Error{Kind: runs.ErrInterrupted, Message: msgInterrupted, Err: cause}
}

func configError(format string, a ...any) *Error {
	err := fmt.Errorf(format, a...)
	return &Error{Kind: runs.ErrConfig, Message: runs.TruncateError(err.Error()), Err: err}
}

// modelError maps a failed model call to the turn's error. turnCtx is the
// caller's context and callCtx the call's, which also carries the turn's
// wall-clock deadline. refund is true for an infrastructure failure before
// any model output: a transport error or 5xx on the first call.
func modelError(turnCtx, callCtx context.Context, err error, first bool, b budget) (e *Error, refund bool) {
	if turnCtx.Err() != nil {
		return interrupted(context.Cause(turnCtx)), false
	}
	if errors.Is(callCtx.Err(), context.DeadlineExceeded) {
		return b.timeoutError(err), false
	}
	if errors.Is(err, llm.ErrGuardrail) {
		return &Error{Kind: runs.ErrGuardrailBlocked, Message: msgGuardrail, Err: err}, false
	}
	var ce *llm.CallError
	if errors.As(err, &ce) {
		infra := errors.Is(ce.Kind, llm.ErrCall) && (ce.Status == 0 || ce.Status >= 500)
		return &Error{Kind: runs.ErrLLM, Message: runs.TruncateError(ce.Error()), Err: err}, first && infra
	}
	return &Error{Kind: runs.ErrLLM, Message: runs.TruncateError("model call failed: " + err.Error()), Err: err}, false
}
