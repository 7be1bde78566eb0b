package e2b

import (
	"context"
	"fmt"
	"maps"

	"github.com/commonly/runtime/shared/sandbox"
)

// RunSandboxes lists one run's sandboxes of this client's stage, running
// or paused, by the tags every sandbox of ours carries: those a stopped
// attempt made but never recorded (it died between E2B's answer and the
// record) among them.
func (c *Client) RunSandboxes(ctx context.Context, runID string) ([]sandbox.Listed, error) {
	filter := maps.Clone(Owner(c.cfg.Stage))
	filter[MetaRunID] = runID
	all, err := c.List(ctx, ListQuery{Metadata: filter, State: []string{StateRunning, StatePaused}, Limit: listPage})
	if err != nil {
		return nil, fmt.Errorf("e2b: list the sandboxes of run %s: %w", runID, err)
	}
	out := make([]sandbox.Listed, 0, len(all))
	for _, sb := range all {
		// The filter is E2B's; a row that is not ours is never killed.
		if l := listed(sb); l.Stage == c.cfg.Stage && l.RunID == runID {
			out = append(out, l)
		}
	}
	return out, nil
}
