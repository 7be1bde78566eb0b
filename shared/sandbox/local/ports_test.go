package local_test

import (
	"github.com/commonly/runtime/shared/reaper"
	"github.com/commonly/runtime/shared/sandbox/local"
)

// The provider is the reaper's Local. Checked in a test: the reaper
// imports this package for its Live type, so the package cannot import it.
var _ reaper.Local = (*local.Provider)(nil)
