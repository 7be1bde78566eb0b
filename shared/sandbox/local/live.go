package local

import (
	"context"
	"slices"
	"strings"
	"time"
)

// Live is a session not killed yet, as the reaper sees it.
type Live struct {
	ID        string
	StartedAt time.Time
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

// Live lists the sessions of this provider not killed yet, oldest first:
// the local stack's reaper kills those past their lifetime, as it does
// E2B's (each session also has its own lifetime timer; the reaper is the
// backstop, as in AWS).
func (p *Provider) Live() []Live {
	p.liveMu.Lock()
	out := make([]Live, 0, len(p.live))
	for id, s := range p.live {
		out = append(out, Live{ID: id, StartedAt: s.started})
	}
	p.liveMu.Unlock()
	slices.SortFunc(out, func(a, b Live) int {
		if c := a.StartedAt.Compare(b.StartedAt); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
	return out
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
