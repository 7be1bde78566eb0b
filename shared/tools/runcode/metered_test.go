package runcode_test

import (
	"context"
	"testing"

	"github.com/commonly/runtime/shared/sandbox"
	"github.com/commonly/runtime/shared/tools"
)

// Metered: before the sandbox exists the next call may commit its whole
// life; once it lives, its life not yet priced is outstanding and later
// calls add nothing beyond it; after Close nothing is left.
func TestMeteredCountsTheSandboxLife(t *testing.T) {
	h := newHarness(t, nil)
	h.fake.OnExecute(echo)
	life := sandbox.Lifetime.Milliseconds()
	var m tools.Metered = h.tool
	if m.Outstanding() != (tools.Usage{}) || m.NextCall() != (tools.Usage{SandboxMillis: life}) {
		t.Fatalf("before: outstanding %+v next %+v", m.Outstanding(), m.NextCall())
	}
	r := h.call(t, "python", "1")
	output(t, r)
	if m.NextCall() != (tools.Usage{}) || m.Outstanding() != (tools.Usage{SandboxMillis: life - r.Usage.SandboxMillis}) {
		t.Fatalf("after a run of %d ms: outstanding %+v next %+v", r.Usage.SandboxMillis, m.Outstanding(), m.NextCall())
	}
	if err := h.tool.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if m.Outstanding() != (tools.Usage{}) || m.NextCall() != (tools.Usage{}) {
		t.Fatalf("after Close: outstanding %+v next %+v", m.Outstanding(), m.NextCall())
	}
}
