package turns

import (
	"errors"
	"fmt"
	"time"

	"github.com/commonly/runtime/shared/money"
)

// Sentinel errors of the turn service. The API maps each to one HTTP
// status and problem type, once, with errors.Is.
var (
	ErrInvalid         = errors.New("invalid request")
	ErrUnauthenticated = errors.New("no identity")
	// ErrMalformedIdentity: the token's subject breaks the id rule
	// (tablekeys.ValidID), so it cannot name a user in a key.
	ErrMalformedIdentity   = errors.New("malformed identity")
	ErrForbidden           = errors.New("not yours")
	ErrNotFound            = errors.New("not found")
	ErrIdempotencyConflict = errors.New("idempotency key reused with a different request")
	ErrCeilingReached      = errors.New("daily turn ceiling reached")
	ErrSpendCapReached     = errors.New("daily spend cap reached")
	// ErrUnavailable: a dependency (the table, the dispatcher) could not
	// be reached. For the ceiling this means "fail closed".
	ErrUnavailable          = errors.New("temporarily unavailable")
	ErrFallbackUnconfigured = errors.New("durable-object fallback not configured")
	ErrNotClaimable         = errors.New("run is not queued")
	// ErrAlreadyFinal: a write meant for a live run found it final already.
	ErrAlreadyFinal = errors.New("run already final")
	// ErrLeaseLost: a worker's write was refused because another attempt
	// took the run over (its lease lapsed): the worker stops at once and
	// writes nothing more.
	ErrLeaseLost = errors.New("run taken over by another attempt")
	// ErrCancelled: a worker's write was refused because its run's owner
	// asked to stop it (POST /v1/runs/{runId}/cancel): the worker stops
	// the turn and ends the run cancelled.
	ErrCancelled = errors.New("run cancelled")
	// ErrNotCancellable: a cancel found the run queued, final, or with its
	// answer on its way to the pod (Service.Cancel says which).
	ErrNotCancellable = errors.New("run cannot be cancelled")
	// ErrLeaseHeld: a dispatch found the run held by a live lease (its
	// worker may still be running it): the dispatch fails, so that Lambda
	// tries it again later.
	ErrLeaseHeld = errors.New("run held by a live worker")
	// ErrAttemptEnding is the cause of a turn's context cancelled because
	// its invocation is ending (the function's timeout is near): an
	// engine that can leaves the run for another attempt to resume.
	ErrAttemptEnding = errors.New("the invocation is ending")
	// ErrLeftForResume: the attempt stopped without ending its run, left
	// for another attempt (EngineResult.Leave): the dispatch fails, so
	// that Lambda's retry takes the run over.
	ErrLeftForResume = errors.New("run left for another attempt")
	// ErrFinalWrite: a turn ran but its final write failed; the outcome is
	// kept for a retried dispatch of the run (Worker.Execute).
	ErrFinalWrite = errors.New("final write failed")
)

// InvalidError names the field at fault.
type InvalidError struct {
	Field  string
	Reason string
}

func (e *InvalidError) Error() string { return fmt.Sprintf("%s: %s", e.Field, e.Reason) }
func (e *InvalidError) Unwrap() error { return ErrInvalid }

// Invalid builds an ErrInvalid for a field.
func Invalid(field, format string, a ...any) error {
	return &InvalidError{Field: field, Reason: fmt.Sprintf(format, a...)}
}

// CeilingError carries what a refused caller needs to know.
type CeilingError struct {
	Limit    int64
	Used     int64
	ResetsAt time.Time
	// RetryAfter is how long until ResetsAt, by the service's clock.
	RetryAfter time.Duration
}

func (e *CeilingError) Error() string {
	return fmt.Sprintf("daily turn ceiling reached: %d of %d used, resets at %s", e.Used, e.Limit, e.ResetsAt.Format(time.RFC3339))
}
func (e *CeilingError) Unwrap() error { return ErrCeilingReached }

// SpendCapError carries what a caller refused at the daily spend cap
// (DAILY_SPEND_CAP_USD) needs to know.
type SpendCapError struct {
	Limit money.Micros
	Spent money.Micros
	// Reserved is what the day's turns still in flight hold: with Spent,
	// what leaves no useful reservation under Limit.
	Reserved money.Micros
	ResetsAt time.Time
	// RetryAfter is how long until ResetsAt, by the service's clock.
	RetryAfter time.Duration
}

func (e *SpendCapError) Error() string {
	return fmt.Sprintf("daily spend cap reached: %s of %s spent, %s reserved, resets at %s", e.Spent, e.Limit, e.Reserved, e.ResetsAt.Format(time.RFC3339))
}
func (e *SpendCapError) Unwrap() error { return ErrSpendCapReached }
