package turns

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/commonly/runtime/shared/money"
	"github.com/commonly/runtime/shared/runs"
)

// InterruptAfter is how long after its admission a run may legitimately
// still be open. Past it, the run's worker is gone.
const InterruptAfter = 5 * time.Minute

// ReclaimStore is the persistence the reclaimer needs.
type ReclaimStore interface {
	// OpenRuns lists runs still open (queued or running) admitted before
	// before, oldest first, at most limit, from the open-runs index.
	OpenRuns(ctx context.Context, before time.Time, limit int) ([]OpenRun, error)
	GetRun(ctx context.Context, runID string) (*runs.Run, error)
	FinishRun(ctx context.Context, r *runs.Run, refund bool) error
	// RunSandboxes lists the run's sandboxes still registered running.
	RunSandboxes(ctx context.Context, runID string) ([]SandboxRef, error)
}

// ReclaimerConfig configures a Reclaimer.
type ReclaimerConfig struct {
	// Store is required.
	Store ReclaimStore
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// Log gets one line per interruption; nil means slog.Default().
	Log *slog.Logger
}

// Reclaimer closes the runs whose worker is gone.
type Reclaimer struct {
	cfg ReclaimerConfig
}

// NewReclaimer checks cfg and fills its defaults.
func NewReclaimer(cfg ReclaimerConfig) (*Reclaimer, error) {
	if cfg.Store == nil {
		return nil, errors.New("turns: the reclaimer needs a store")
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	return &Reclaimer{cfg: cfg}, nil
}

// OpenRun is a run still open on the open-runs index.
type OpenRun struct {
	RunID string
	Since time.Time
}

// Abandoned lists runs still queued or running admitted before
// now-InterruptAfter, oldest first, at most limit.
func (r *Reclaimer) Abandoned(ctx context.Context, limit int) ([]OpenRun, error) {
	return nil, errors.New("turns: Abandoned: not implemented yet")
}

// SandboxRef names a sandbox of a run.
type SandboxRef struct {
	Provider, SandboxID string
}

// Interruption is what Interrupt did.
type Interruption struct {
	// Closed is false when the run was already final (a late worker or
	// Lambda's retry closed it first) or is not past InterruptAfter: an
	// outcome, not an error.
	Closed     bool
	Refunded   bool
	CostMicros money.Micros
	// Sandboxes are the run's sandboxes still registered running, for the
	// caller to kill (and mark killed).
	Sandboxes []SandboxRef
}

// Interrupt closes the run interrupted if it is still open and past
// InterruptAfter.
func (r *Reclaimer) Interrupt(ctx context.Context, runID string) (Interruption, error) {
	return Interruption{}, errors.New("turns: Interrupt: not implemented yet")
}
