package local

import (
	"context"
	"iter"
	"slices"
	"strings"
	"time"

	"github.com/commonly/runtime/shared/sandbox"
)

// live is a session not killed yet.
type live struct {
	ID        string
	StartedAt time.Time
	RunID     string
}

// track adds a session created by this provider to its live set.
func (p *Provider) track(s *Session) {
	p.liveMu.Lock()
	defer p.liveMu.Unlock()
	p.live[s.id] = s
}

// untrack removes a session being killed.
func (p *Provider) untrack(id string) {
	p.liveMu.Lock()
	defer p.liveMu.Unlock()
	delete(p.live, id)
}

// liveSessions lists the sessions of this provider not killed yet, oldest first:
// the local stack's reaper kills those past their lifetime, as it does
// E2B's (each session also has its own lifetime timer; the reaper is the
// backstop, as in AWS).
func (p *Provider) liveSessions() []live {
	p.liveMu.Lock()
	out := make([]live, 0, len(p.live))
	for id, s := range p.live {
		out = append(out, live{ID: id, StartedAt: s.started, RunID: s.runID})
	}
	p.liveMu.Unlock()
	slices.SortFunc(out, func(a, b live) int {
		if c := a.StartedAt.Compare(b.StartedAt); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
	return out
}

// The provider is the reaper's view of its sessions.
var _ sandbox.Inventory = (*Provider)(nil)

// Provider names the local provider as its records do (sandbox.Inventory).
func (p *Provider) Provider() string { return ProviderName }

// ListSandboxes yields this provider's live sessions as one page
// (sandbox.Inventory): they are all this process's, so all stage's. The
// local stack's reaper runs in the process that owns them.
func (p *Provider) ListSandboxes(_ context.Context, stage string) iter.Seq2[[]sandbox.Listed, error] {
	return func(yield func([]sandbox.Listed, error) bool) {
		sessions := p.liveSessions()
		page := make([]sandbox.Listed, len(sessions))
		for i, l := range sessions {
			page[i] = sandbox.Listed{ID: l.ID, Stage: stage, RunID: l.RunID, StartedAt: l.StartedAt}
		}
		yield(page, nil)
	}
}

// KillSandbox kills a session of this provider by id and reports whether
// it was still alive: one already killed, or never this provider's, is
// found false without an error (as E2B's 404).
func (p *Provider) KillSandbox(ctx context.Context, id string) (found bool, err error) {
	p.liveMu.Lock()
	s, ok := p.live[id]
	p.liveMu.Unlock()
	if !ok {
		return false, nil
	}
	return true, s.Kill(ctx)
}

// RunSandboxes lists one run's live sessions of this provider.
func (p *Provider) RunSandboxes(_ context.Context, runID string) ([]sandbox.Listed, error) {
	var out []sandbox.Listed
	for _, l := range p.liveSessions() {
		if l.RunID == runID {
			out = append(out, sandbox.Listed{ID: l.ID, RunID: l.RunID, StartedAt: l.StartedAt})
		}
	}
	return out, nil
}
