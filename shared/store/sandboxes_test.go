package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/commonly/runtime/shared/sandbox"
)

func TestSandboxLedger(t *testing.T) {
	s := newStore(t)
	ctx := context.Background()
	t0 := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	for i, id := range []string{"sbx-old", "sbx-new", "sbx-killed"} {
		rec := sandbox.NewRecord("e2b", id, sandbox.Meta{RunID: "r", UserID: "u", InstallID: "i"}, t0.Add(time.Duration(i)*time.Minute))
		if err := s.SandboxCreated(ctx, rec); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.SandboxKilled(ctx, "sbx-killed", t0); err != nil {
		t.Fatal(err)
	}
	if err := s.SandboxKilled(ctx, "never-recorded", t0); err != nil {
		t.Fatalf("killing an unrecorded sandbox: %v", err)
	}
	// At 12:03:30 only sbx-old (expired 12:03:00) is past its lifetime.
	got, err := s.ExpiredSandboxes(ctx, t0.Add(3*time.Minute+30*time.Second), 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].SandboxID != "sbx-old" || got[0].Status != sandbox.StatusRunning {
		t.Fatalf("expired = %+v", got)
	}
	got, _ = s.ExpiredSandboxes(ctx, t0.Add(time.Hour), 10)
	if len(got) != 2 {
		t.Fatalf("an hour later: %+v (the killed one must not appear)", got)
	}
}
