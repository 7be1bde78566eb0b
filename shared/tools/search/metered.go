package search

import "github.com/commonly/runtime/shared/tools"

var _ tools.Metered = (*Tool)(nil)

// Outstanding implements tools.Metered: a search is priced when it is
// made, so nothing is left to add between calls.
func (t *Tool) Outstanding() tools.Usage { return tools.Usage{} }

// NextCall implements tools.Metered: one query a call.
func (t *Tool) NextCall() tools.Usage { return tools.Usage{SearchQueries: 1} }
