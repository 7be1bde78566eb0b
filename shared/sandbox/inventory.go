package sandbox

import (
	"context"
	"iter"
	"time"
)

// Listed is one sandbox as its provider lists it: whose deployment made
// it (Stage, "" when it is not this runtime's), the run it served, and
// when it started.
type Listed struct {
	ID        string
	Stage     string
	RunID     string
	StartedAt time.Time
}

// Inventory is a provider's sandboxes as the reaper reads them: those it
// holds for a deployment, and a kill by id. Each provider's adapter
// stands beside the provider (E2B's client, the local provider), so the
// reaper reads every provider one way and imports none of them.
type Inventory interface {
	// Provider names the provider as a Record does (Record.Provider).
	Provider() string
	// ListSandboxes yields stage's sandboxes, running or paused, a page
	// at a time, oldest first within a page; an error ends it, yielded
	// last. A provider that cannot filter by stage says each one's.
	ListSandboxes(ctx context.Context, stage string) iter.Seq2[[]Listed, error]
	// KillSandbox kills one by id; found is false (no error) when it was
	// gone already.
	KillSandbox(ctx context.Context, id string) (found bool, err error)
}
