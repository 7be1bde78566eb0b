package turns

import (
	"context"
	"fmt"
	"time"

	"github.com/commonly/runtime/shared/runs"
	"github.com/commonly/runtime/shared/tablekeys"
)

// GetRun returns a run its owner or a service caller may see.
func (s *Service) GetRun(ctx context.Context, c Caller, runID string) (*runs.Run, error) {
	if c.ID == "" {
		return nil, ErrUnauthenticated
	}
	return readRun(ctx, s.store, c, runID)
}

// readRun is the run if caller c may see it: the id checked, the run
// read, someone else's reported missing. GetRun and the Watcher share it.
func readRun(ctx context.Context, rr RunReader, c Caller, runID string) (*runs.Run, error) {
	if !tablekeys.ValidID(runID) {
		return nil, Invalid("runId", tablekeys.IDRule)
	}
	r, err := rr.GetRun(ctx, runID)
	if err != nil {
		return nil, wrapUnavailable("read run", err)
	}
	if !c.canActFor(r.UserID) {
		// Someone else's run is reported as missing, so run ids cannot be probed.
		return nil, fmt.Errorf("run %q: %w", runID, ErrNotFound)
	}
	return r, nil
}

// WaitRun polls a run until it is final or wait elapses, and returns its
// latest state.
func (s *Service) WaitRun(ctx context.Context, c Caller, run *runs.Run, wait time.Duration) (*runs.Run, error) {
	deadline := s.now().Add(wait)
	delay := 100 * time.Millisecond
	for !run.Status.Final() {
		left := deadline.Sub(s.now())
		if left <= 0 {
			return run, nil
		}
		t := time.NewTimer(min(delay, left))
		select {
		case <-ctx.Done():
			t.Stop()
			return run, nil
		case <-t.C:
		}
		delay = min(delay*2, time.Second)
		latest, err := s.GetRun(ctx, c, run.RunID)
		if err != nil {
			return nil, err
		}
		run = latest
	}
	return run, nil
}
