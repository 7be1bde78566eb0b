package e2b_test

import (
	"context"
	"testing"

	"github.com/commonly/runtime/shared/sandbox"
	"github.com/commonly/runtime/shared/sandbox/e2b"
	"github.com/commonly/runtime/shared/sandbox/e2b/e2btest"
)

// A run's sandboxes are listed by its tag, and only this stage's: a
// takeover kills what the stopped attempt made, nothing of another run's
// or another deployment's.
func TestRunSandboxesListsOneRunOfOneStage(t *testing.T) {
	f := e2btest.Start(t)
	ctx := context.Background()
	client := func(stage string) *e2b.Client {
		cfg := f.ClientConfig()
		cfg.Stage = stage
		c, err := e2b.New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	dev, prod := client("dev"), client("prod")
	mine, err := dev.Create(ctx, sandbox.Meta{RunID: "run-a", UserID: "u", InstallID: "i"})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		c   *e2b.Client
		run string
	}{{dev, "run-b"}, {prod, "run-a"}} {
		if _, err := c.c.Create(ctx, sandbox.Meta{RunID: c.run, UserID: "u", InstallID: "i"}); err != nil {
			t.Fatal(err)
		}
	}
	got, err := dev.RunSandboxes(ctx, "run-a")
	if err != nil || len(got) != 1 || got[0].ID != mine.ID() || got[0].RunID != "run-a" || got[0].StartedAt.IsZero() {
		t.Fatalf("run-a's sandboxes in dev: %+v %v, want %s alone", got, err, mine.ID())
	}
	if err := mine.Kill(ctx); err != nil {
		t.Fatal(err)
	}
	if got, err := dev.RunSandboxes(ctx, "run-a"); err != nil || len(got) != 0 {
		t.Errorf("after the kill: %+v %v", got, err)
	}
}
