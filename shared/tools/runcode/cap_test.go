package runcode_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/commonly/runtime/internal/dynamodblocal"
	"github.com/commonly/runtime/shared/runs"
	"github.com/commonly/runtime/shared/sandbox"
	"github.com/commonly/runtime/shared/sandbox/e2b"
	"github.com/commonly/runtime/shared/sandbox/e2b/e2btest"
	"github.com/commonly/runtime/shared/store"
	"github.com/commonly/runtime/shared/tools/runcode"
)

// capped is a factory of turns' tools under a deployment-wide cap of
// limit sandboxes, its slots on the real store (embedded DynamoDB), its
// sandboxes on the fake E2B.
func capped(t *testing.T, limit int) (*runcode.Factory, *e2btest.Fake, *store.Dynamo) {
	t.Helper()
	srv, err := dynamodblocal.StartWithTables(context.Background(), "127.0.0.1:0", store.Tables{State: "state", Runs: "runs"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	st, err := store.New(store.Config{DB: srv.Client(), Tables: store.Tables{State: "state", Runs: "runs"}})
	if err != nil {
		t.Fatal(err)
	}
	f := e2btest.Start(t)
	c, err := e2b.New(f.ClientConfig())
	if err != nil {
		t.Fatal(err)
	}
	fac, err := runcode.NewFactory(runcode.Config{Provider: c, Ledger: st, MaxSandboxes: limit, Slots: st})
	if err != nil {
		t.Fatal(err)
	}
	return fac, f, st
}

func callTool(t *testing.T, tool *runcode.Tool, runID string) (runcode.Output, *runs.CodeRun, error) {
	t.Helper()
	e := env
	e.RunID = runID
	res := tool.Call(context.Background(), e, []byte(`{"language":"python","code":"print(1)"}`))
	if res.Fatal != nil {
		t.Fatalf("%s: the turn failed: %v", runID, res.Fatal)
	}
	out, _ := res.Output.(runcode.Output)
	return out, res.CodeRun, res.Err
}

// At the deployment's cap a turn's code call is refused with a clear
// tool error (the turn goes on; no sandbox is made at the provider); the
// place is free again once a turn's sandbox is killed.
func TestSandboxCapAnswersTheModel(t *testing.T) {
	fac, f, _ := capped(t, 2)
	f.OnExecute(echo)
	a, b, c := fac.New(), fac.New(), fac.New()
	for _, turn := range []struct {
		tool *runcode.Tool
		run  string
	}{{a, "run-a"}, {b, "run-b"}} {
		if _, _, err := callTool(t, turn.tool, turn.run); err != nil {
			t.Fatalf("%s under the cap: %v", turn.run, err)
		}
	}
	_, rec, err := callTool(t, c, "run-c")
	if err == nil || !strings.Contains(err.Error(), "at capacity") || !strings.Contains(err.Error(), "(2)") {
		t.Fatalf("the third turn's call: %v; want the cap's tool error", err)
	}
	if rec == nil || rec.ExitKind != runcode.ExitRejected {
		t.Errorf("the refused call is recorded as %+v, want a rejected run", rec)
	}
	if n := len(f.Creates()); n != 2 {
		t.Fatalf("%d sandboxes created at the provider, want 2", n)
	}
	// Turn a ends: its sandbox is killed and its place freed.
	if err := a.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, _, err := callTool(t, c, "run-c"); err != nil {
		t.Fatalf("after a turn ended: %v", err)
	}
	for _, tool := range []*runcode.Tool{b, c} {
		if err := tool.Close(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	if f.Alive() != 0 {
		t.Errorf("%d sandboxes alive after every turn ended", f.Alive())
	}
}

// A creation the provider refuses frees the place it held: refusals do
// not eat the cap.
func TestSandboxCapFreedWhenCreationFails(t *testing.T) {
	fac, f, st := capped(t, 1)
	f.FailCreates(100, http.StatusServiceUnavailable, "sandbox_capacity_unavailable")
	for i := range 3 {
		_, _, err := callTool(t, fac.New(), "run-refused")
		if err == nil || strings.Contains(err.Error(), "at capacity") {
			t.Fatalf("creation %d: %v; want the provider's refusal, not the cap", i+1, err)
		}
	}
	// The one place is free: the refusals held none.
	now := time.Now()
	if _, err := st.AcquireSlot(context.Background(), 1, "probe", now, now.Add(time.Minute)); err != nil {
		t.Fatalf("the place after three refused creations: %v", err)
	}
}

// slotsDown is a state table that cannot be read.
type slotsDown struct{}

func (slotsDown) AcquireSlot(context.Context, int, string, time.Time, time.Time) (sandbox.Slot, error) {
	return sandbox.Slot{}, errors.New("ProvisionedThroughputExceededException")
}
func (slotsDown) ReleaseSlot(context.Context, sandbox.Slot) error { return nil }

// The cap unreadable is a tool error too, not the turn's failure; a cap
// without slots, or a negative one, is refused at construction.
func TestSandboxCapUnreadableIsAToolError(t *testing.T) {
	h := newHarness(t, func(c *runcode.Config) { c.MaxSandboxes, c.Slots = 5, slotsDown{} })
	res := h.call(t, "python", "print(1)")
	if res.Fatal != nil || res.Err == nil || strings.Contains(res.Err.Error(), "Throughput") {
		t.Fatalf("result %+v: want a tool error without the internal text", res)
	}
	if len(h.fake.Creates()) != 0 {
		t.Error("a sandbox was created without a place under the cap")
	}
	c, _ := e2b.New(e2b.Config{APIKey: "k", Stage: "test"})
	if _, err := runcode.NewFactory(runcode.Config{Provider: c, Ledger: &ledger{}, MaxSandboxes: 3}); err == nil {
		t.Error("a cap without slots accepted")
	}
	if _, err := runcode.NewFactory(runcode.Config{Provider: c, Ledger: &ledger{}, MaxSandboxes: -1, Slots: slotsDown{}}); err == nil {
		t.Error("a negative cap accepted")
	}
}
