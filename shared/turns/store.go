// Package turns is the turn service: it admits turns against the daily
// ceiling, records them as AgentRuns, routes them to an engine and drives
// every run to a final status. It also holds the records those rules
// decide on, which nothing else uses: installs with the rule that picks
// their engine (install.go), and plans with their daily ceilings
// (plans.go). It knows nothing of API Gateway or Lambda.
package turns

import (
	"context"
	"time"

	"github.com/commonly/runtime/shared/money"
	"github.com/commonly/runtime/shared/runs"
)

// Store is the persistence the service needs. Implementations return the
// sentinel errors of this package for outcomes (not found, not claimable)
// and wrap everything else.
type Store interface {
	GetInstall(ctx context.Context, installID string) (*Install, error)
	// GetInstallAndPlan reads both in one round trip; a missing plan is free.
	GetInstallAndPlan(ctx context.Context, installID, userID string) (*Install, Plan, error)
	GetPlan(ctx context.Context, userID string) (Plan, error)
	PutInstall(ctx context.Context, in *Install) error
	SetMigration(ctx context.Context, installID string, m Migration) (*Install, error)
	SetPlan(ctx context.Context, userID string, p Plan, now time.Time) error

	// Admit counts the turn against the user's day and creates the run in
	// one atomic write. See Admission.
	Admit(ctx context.Context, a Admission) (AdmitResult, error)
	GetRun(ctx context.Context, runID string) (*runs.Run, error)
	// LookRun reads only a run's status, attempt and stop request (its
	// CancelRequestedAt): a running worker's look through a silence.
	LookRun(ctx context.Context, runID string) (*runs.Run, error)
	// ClaimRun gives the run to the caller's attempt under a new lease
	// (runs.Lease) and returns it: a queued run admitted within
	// ClaimWindow before at, or a running run whose lease lapsed with
	// attempts left (a takeover, Attempts above 1). Otherwise
	// ErrNotClaimable, with the current run.
	ClaimRun(ctx context.Context, runID string, at time.Time) (*runs.Run, error)
	// CheckpointRun saves a running run's progress with the journal
	// entries appended since its last write, in one write, only while
	// r.Attempts holds the run (ErrLeaseLost, ErrAlreadyFinal otherwise);
	// it renews the lease to r.Lease.
	CheckpointRun(ctx context.Context, r *runs.Run, journal []JournalEntry) error
	// RequestCancel marks a running run whose answer is not on its way to
	// the pod as asked to stop; otherwise ErrNotCancellable with the run.
	RequestCancel(ctx context.Context, runID string, at time.Time) (*runs.Run, error)
	// ReadJournal returns the run's journal entries in order.
	ReadJournal(ctx context.Context, runID string) ([]JournalEntry, error)
	// RunSandboxes lists the run's sandboxes still recorded running: the
	// ones a stopped attempt left, for the attempt that takes it over.
	RunSandboxes(ctx context.Context, runID string) ([]SandboxRef, error)
	// FinishRun writes the final run, only while it is open under
	// r.Attempts (ErrAlreadyFinal, ErrLeaseLost otherwise), and, when
	// refund is set, gives the turn back; a run with a reservation (ReservedMicros) releases it and
	// charges its cost (CapChargedMicros when higher) to the day's cap in
	// the same write; all at most once per run.
	FinishRun(ctx context.Context, r *runs.Run, refund bool) error
	// ListRuns reads a page of a user's runs, newest first: at most limit
	// (1 to MaxRunsPage), after the run cursor names (a Next of an
	// earlier page, checked by the caller; "" for the newest).
	ListRuns(ctx context.Context, userID, cursor string, limit int) (RunPage, error)
	// Usage returns a user's turns and cost on a UTC day, and their plan.
	Usage(ctx context.Context, userID, day string) (Usage, error)
}

// Admission is one turn to admit.
type Admission struct {
	Run *runs.Run
	// Plan is the plan Limit was taken from. Admit counts the turn only if
	// it is still the user's plan (a missing plan is free), so a plan
	// remembered from an earlier turn can never admit under a stale limit.
	Plan  Plan
	Limit int64
	// SpendCap, when positive, refuses the turn once the day's cost (the
	// alarm function's ledger total on the same item) is at or above it
	// (DAILY_SPEND_CAP_USD), in the same condition as the ceiling.
	SpendCap money.Micros
	// With a spend cap, Reserve is the most the turn may reserve (its
	// bound, TURN_MAX_USD) and MinReserve the least reservation worth
	// admitting it with (the worst case of the smallest useful model
	// call). Admit reserves min(Reserve, what the day has left under the
	// cap) on the user-day item, in the same transaction, and sets
	// Run.ReservedMicros; below MinReserve it refuses (CapRefused).
	Reserve    money.Micros
	MinReserve money.Micros
	// IdempotencyKey scopes a client's key to the caller; empty = none.
	IdempotencyKey string
	CallerID       string
	Now            time.Time
}

// AdmitResult says what admission did.
type AdmitResult struct {
	// Admitted: the run was created and counted.
	Admitted bool
	// ReplayOf is set when the idempotency key was already used: the
	// existing run id and the hash of the request that created it.
	ReplayOf    string
	ReplayHash  string
	CeilingUsed int64 // when refused at the ceiling
	// CapRefused: refused at the spend cap. CapSpent is the day's cost
	// then (the ledger's, or the finished runs' when higher), CapReserved
	// what the day's turns still in flight hold.
	CapRefused  bool
	CapSpent    money.Micros
	CapReserved money.Micros
	// PlanChanged: nothing was written because the user's plan is no
	// longer Admission.Plan; read it and admit again.
	PlanChanged bool
}

// Usage is a user's consumption on one UTC day.
type Usage struct {
	Plan       Plan
	Turns      int64
	CostMicros int64
	// SpendAlarmRaised: the alarm function raised the day's spend alarm.
	SpendAlarmRaised bool
	// ReservedMicros is what the day's turns in flight hold under the
	// spend cap; CapCommittedMicros the cost of its finished runs, as
	// their final writes charged it (zero without a cap).
	ReservedMicros     int64
	CapCommittedMicros int64
}
