package runcode

import (
	"github.com/commonly/runtime/shared/sandbox"
	"github.com/commonly/runtime/shared/tools"
)

var _ tools.Metered = (*Tool)(nil)

// lifeMillis is the most a sandbox is billed for: the provider kills it
// at sandbox.Lifetime after its creation.
var lifeMillis = sandbox.Lifetime.Milliseconds()

// Outstanding implements tools.Metered: a live sandbox may still be
// billed for the rest of its life (the runs price only their own time,
// and the turn's end prices the idle rest): its lifetime less what its
// runs were priced.
func (t *Tool) Outstanding() tools.Usage {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.session == nil || t.closed {
		return tools.Usage{}
	}
	return tools.Usage{SandboxMillis: max(lifeMillis-t.ranMillis, 0)}
}

// NextCall implements tools.Metered: the call that creates the sandbox
// may commit its whole life; later calls run inside what Outstanding
// already counts.
func (t *Tool) NextCall() tools.Usage {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.session != nil || t.closed || t.lost != nil {
		return tools.Usage{}
	}
	return tools.Usage{SandboxMillis: lifeMillis}
}
