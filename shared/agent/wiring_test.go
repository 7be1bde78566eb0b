package agent

import (
	"github.com/commonly/runtime/shared/llm"
	"github.com/commonly/runtime/shared/pricing"
	"github.com/commonly/runtime/shared/tools"
	"github.com/commonly/runtime/shared/tools/pod"
)

// The production types the turn function wires in satisfy the narrow
// interfaces declared here; kept in a test so the loop itself depends on
// none of them.
var (
	_ Model   = (*llm.Client)(nil)
	_ Pricer  = (*pricing.Table)(nil)
	_ Toolset = (*tools.Set)(nil)
	_ Poster  = (*pod.Client)(nil)
)
