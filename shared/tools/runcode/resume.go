package runcode

import (
	"context"
	"fmt"
	"time"

	"github.com/commonly/runtime/shared/sandbox"
)

// A turn taken over from an attempt that stopped gets a new tool: the
// stopped attempt's sandbox is killed by its id (KillLeft), and the new
// tool goes on from what the run recorded (Resume): its runs count
// against the turn's, its sandboxes' lives against the one lifetime,
// and the first run in a new sandbox tells the model that what earlier
// runs wrote is gone.

// restartNote is what the first run in a resumed turn's new sandbox adds
// to its output.
const restartNote = "the code sandbox was restarted after an interruption: files and state from earlier runs in this turn are gone"

// KillLeft kills a sandbox a stopped attempt of the turn left running,
// by its id, and records the kill when the sandbox was recorded (one the
// attempt died before recording has no record to close), so that one
// sandbox is alive at a time and the reaper has nothing left to do for
// it.
func (f *Factory) KillLeft(ctx context.Context, sandboxID string, recorded bool, at time.Time) error {
	if _, err := f.cfg.Provider.KillSandbox(ctx, sandboxID); err != nil {
		return fmt.Errorf("runcode: kill the stopped attempt's sandbox %s: %w", sandboxID, err)
	}
	if !recorded {
		return nil
	}
	if err := f.cfg.Ledger.SandboxKilled(ctx, sandboxID, at); err != nil {
		return fmt.Errorf("runcode: record the kill of sandbox %s: %w", sandboxID, err)
	}
	return nil
}

// Unrecorded lists the run's sandboxes the provider still holds that are
// not among recorded: one a stopped attempt made and died before it
// recorded.
func (f *Factory) Unrecorded(ctx context.Context, runID string, recorded map[string]bool) ([]sandbox.Listed, error) {
	all, err := f.cfg.Provider.RunSandboxes(ctx, runID)
	if err != nil {
		return nil, fmt.Errorf("runcode: list the sandboxes of run %s: %w", runID, err)
	}
	var out []sandbox.Listed
	for _, s := range all {
		if !recorded[s.ID] {
			out = append(out, s)
		}
	}
	return out, nil
}

// Resume sets a resumed turn's tool to what its run recorded: runs code
// runs made, and lifeUsed of the sandboxes' one lifetime spent. A new
// sandbox lives at most what is left of it; none is made once it is spent.
func (t *Tool) Resume(runs int, lifeUsed time.Duration) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.runs = min(runs, t.cfg.MaxRuns)
	t.lifeLeft = max(sandbox.Lifetime-lifeUsed, 0)
	t.restarted = runs > 0
}
