package localstack

import (
	"context"

	"github.com/commonly/runtime/infra/awslocal/rie"
)

// TB is the part of testing.TB StartTest uses (the package is linked into
// commands too, which need not link testing).
type TB = rie.TB

// StartTest is Start for a test: t fails if the stack does not start, and
// it is closed at t's end, what its bootstraps wrote logged when t failed.
func StartTest(t TB, cfg Config) *Stack {
	t.Helper()
	st, err := Start(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			st.mu.Lock()
			for _, b := range st.bootstraps {
				t.Logf("%s's bootstrap wrote:\n%s", b.fn, b.emu.Output())
			}
			st.mu.Unlock()
		}
		st.Close()
	})
	return st
}
