package turns

import (
	"sync"

	"github.com/commonly/runtime/shared/plans"
)

// planGuesses remembers the plan last seen for each user on this
// container, so that a warm turn need not read it. A guess is never
// trusted: Admit checks in its transaction that the plan is still the one
// the limit was taken from, and a stale guess costs a read and a second
// transaction, never a turn admitted under another plan's ceiling.
type planGuesses struct {
	mu sync.Mutex
	m  map[string]plans.Plan
}

// maxPlanGuesses bounds the memory of a long-lived container.
const maxPlanGuesses = 10000

func (g *planGuesses) get(userID string) (plans.Plan, bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	p, ok := g.m[userID]
	return p, ok
}

func (g *planGuesses) put(userID string, p plans.Plan) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.m == nil || len(g.m) >= maxPlanGuesses {
		g.m = make(map[string]plans.Plan)
	}
	g.m[userID] = p
}
