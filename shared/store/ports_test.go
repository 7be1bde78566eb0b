package store_test

import (
	"github.com/commonly/runtime/shared/reaper"
	"github.com/commonly/runtime/shared/store"
)

// The store is the reaper's Registry. Checked in a test: importing the
// reaper here would link its sandbox packages into every function that
// uses the store (the alarm function among them).
var _ reaper.Registry = (*store.Dynamo)(nil)
