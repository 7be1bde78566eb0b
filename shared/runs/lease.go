package runs

import (
	"time"

	"github.com/commonly/runtime/shared/money"
)

// A running run is held by one worker at a time through a lease: the
// claim takes it with the next attempt number (the epoch), every later
// write of that worker is conditional on the run still carrying it, and
// each write renews it. A worker that stops renewing (it crashed, ran out
// of memory, lost its execution environment) lets the lease lapse; the
// next dispatch of the run then takes it over with the next attempt, and
// a write of the old worker, should it wake, is refused.

// Lease is an attempt's hold on its run, as the run item keeps it.
type Lease struct {
	// Token is drawn by the claim; a write whose response was lost
	// recognises its own claim by it.
	Token string
	// UntilMs is when the lease lapses unless renewed (Unix milliseconds:
	// DynamoDB compares numbers, and the claim compares it with its clock).
	UntilMs int64
	// StartedMs is when the current attempt claimed the run.
	StartedMs int64
	// WorkedMs is the run's working time through the last write, over
	// every attempt: the time bound counts it, not the waits between
	// attempts.
	WorkedMs int64
	// WrittenBy is the attempt of the last write that renewed the lease
	// (its fresh claim counts): the attempt whose work after that write
	// is unknown if the run is taken over.
	WrittenBy int
	// PrevUntilMs is, on a run just taken over, the lease the stopped
	// attempt left: its last write was LeaseDuration before it.
	PrevUntilMs int64
}

// Until is when the lease lapses.
func (l Lease) Until() time.Time { return time.UnixMilli(l.UntilMs).UTC() }

// Lapsed reports whether the lease has lapsed at now; a run without one
// (written before leases) has none to lapse.
func (l Lease) Lapsed(now time.Time) bool { return l.UntilMs > 0 && now.UnixMilli() > l.UntilMs }

// LostAttempt is an attempt whose worker stopped mid-turn, as the attempt
// that took the run over found it.
type LostAttempt struct {
	Attempt int `json:"attempt" dynamodbav:"attempt"`
	// LastWriteAt is the attempt's last durable write (its last renewal
	// of the lease); what it did after is known only from the estimate.
	LastWriteAt time.Time `json:"lastWriteAt" dynamodbav:"lastWriteAt"`
	// ResumedAt is when the next attempt took the run over.
	ResumedAt time.Time `json:"resumedAt" dynamodbav:"resumedAt"`
	// InFlight is what the attempt was doing when its record ends: a model
	// call (model), a tool call (tool), the final post (post) or nothing
	// that is billed (none).
	InFlight string `json:"inFlight" dynamodbav:"inFlight"`
	// CostMicros is what the attempt may have been billed beyond what it
	// recorded: added to the run's Cost.LostMicros. Estimated is always
	// true: the providers' bills are not read back.
	CostMicros   money.Micros `json:"costMicros" dynamodbav:"costMicros"`
	Estimated    bool         `json:"estimated" dynamodbav:"estimated"`
	PromptTokens int64        `json:"promptTokens,omitempty" dynamodbav:"promptTokens,omitempty"`
	// CompletionTokens is the output the call in flight was allowed.
	CompletionTokens int64 `json:"completionTokens,omitempty" dynamodbav:"completionTokens,omitempty"`
	// SandboxMillis is the lost sandbox's life after its last recorded run.
	SandboxMillis int64 `json:"sandboxMillis,omitempty" dynamodbav:"sandboxMillis,omitempty"`
}

// What a lost attempt was doing when its record ends (LostAttempt.InFlight).
const (
	InFlightModel = "model"
	InFlightTool  = "tool"
	InFlightPost  = "post"
	InFlightNone  = "none"
)

// Resumed reports whether the run was taken over at least once.
func (r *Run) Resumed() bool { return len(r.LostAttempts) > 0 }

// LostModelCalls is how many model calls the run's lost attempts had in
// flight: calls made and never recorded, which the call bound counts.
func (r *Run) LostModelCalls() int {
	n := 0
	for _, l := range r.LostAttempts {
		if l.InFlight == InFlightModel {
			n++
		}
	}
	return n
}
