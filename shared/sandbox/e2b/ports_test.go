package e2b_test

import (
	"github.com/commonly/runtime/shared/reaper"
	"github.com/commonly/runtime/shared/sandbox/e2b"
)

// The client is the reaper's E2B. Checked in a test: the reaper imports
// this package for its list types, so the package cannot import it.
var _ reaper.E2B = (*e2b.Client)(nil)
