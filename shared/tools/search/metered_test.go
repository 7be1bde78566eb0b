package search

import (
	"testing"

	"github.com/commonly/runtime/shared/tools"
)

// A search is one query a call, priced when it is made.
func TestMeteredIsOneQueryACall(t *testing.T) {
	var m tools.Metered = &Tool{}
	if m.NextCall() != (tools.Usage{SearchQueries: 1}) || m.Outstanding() != (tools.Usage{}) {
		t.Fatalf("next %+v outstanding %+v", m.NextCall(), m.Outstanding())
	}
}
