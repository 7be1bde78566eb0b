package store

import (
	"context"

	"github.com/commonly/runtime/shared/sandbox"
	"github.com/commonly/runtime/shared/store/storetest"
)

// SetOpenPage makes the open index's pages small, so that tests page.
func SetOpenPage(d *Dynamo, n int) { d.openPage = n }

// GetSandbox reads a sandbox's record (storetest.Sandbox on the store's
// own client and table).
func (d *Dynamo) GetSandbox(ctx context.Context, sandboxID string) (sandbox.Record, bool, error) {
	return storetest.Sandbox(ctx, d.db, d.tables.State, sandboxID)
}
