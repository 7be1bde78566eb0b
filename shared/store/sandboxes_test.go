package store_test

import (
	"context"
	"fmt"
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
	got, err := expiredAll(ctx, s, t0.Add(3*time.Minute+30*time.Second), 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].SandboxID != "sbx-old" || got[0].Status != sandbox.StatusRunning {
		t.Fatalf("expired = %+v", got)
	}
	got, _ = expiredAll(ctx, s, t0.Add(time.Hour), 10)
	if len(got) != 2 {
		t.Fatalf("an hour later: %+v (the killed one must not appear)", got)
	}
}

// The reaper and the turn may both mark a sandbox killed: the write is
// conditional on the record running, so the first mark and its time stay,
// and a failed condition is an outcome.
func TestMarkSandboxKilledIsConditional(t *testing.T) {
	s := newStore(t)
	ctx := context.Background()
	t0 := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	if err := s.SandboxCreated(ctx, sandbox.NewRecord("e2b", "sbx", sandbox.Meta{RunID: "r"}, t0)); err != nil {
		t.Fatal(err)
	}
	if marked, err := s.MarkSandboxKilled(ctx, "sbx", t0.Add(time.Minute)); !marked || err != nil {
		t.Fatalf("first mark: %v, %v", marked, err)
	}
	if marked, err := s.MarkSandboxKilled(ctx, "sbx", t0.Add(5*time.Minute)); marked || err != nil {
		t.Fatalf("second mark: %v, %v; want not marked, no error", marked, err)
	}
	if marked, err := s.MarkSandboxKilled(ctx, "never-recorded", t0); marked || err != nil {
		t.Fatalf("unrecorded: %v, %v", marked, err)
	}
	rec, found, err := s.GetSandbox(ctx, "sbx")
	if err != nil || !found || rec.Status != sandbox.StatusKilled || rec.KilledAt == nil || !rec.KilledAt.Equal(t0.Add(time.Minute)) {
		t.Fatalf("record %+v (found %v, %v): want killed at the first mark", rec, found, err)
	}
	if _, found, err := s.GetSandbox(ctx, "never-recorded"); found || err != nil {
		t.Errorf("GetSandbox of nothing: %v, %v", found, err)
	}
}

// More expired records than fit in one page are read page by page up to
// the limit, oldest first (one shard, so that every record is on it).
func TestExpiredSandboxesPages(t *testing.T) {
	s := newShardedStore(t, 1)
	ctx := context.Background()
	t0 := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	for i := range 25 {
		id := fmt.Sprintf("sbx-%02d", i)
		if err := s.SandboxCreated(ctx, sandbox.NewRecord("e2b", id, sandbox.Meta{RunID: "r"}, t0.Add(time.Duration(i)*time.Second))); err != nil {
			t.Fatal(err)
		}
		if i%5 == 0 { // killed ones leave the index: the pages skip them
			if err := s.SandboxKilled(ctx, id, t0); err != nil {
				t.Fatal(err)
			}
		}
	}
	bound := t0.Add(sandbox.Lifetime + 19*time.Second) // records 0-19 expired, 16 of them running
	for _, tt := range []struct {
		limit int32
		want  int
	}{{3, 3}, {16, 16}, {100, 16}} {
		got, err := s.ExpiredSandboxes(ctx, 0, bound, tt.limit)
		if err != nil || len(got) != tt.want {
			t.Fatalf("limit %d: %d records, %v; want %d", tt.limit, len(got), err, tt.want)
		}
		for i := 1; i < len(got); i++ {
			if !got[i-1].ExpiresAt.Before(got[i].ExpiresAt) || got[i].Status != sandbox.StatusRunning {
				t.Fatalf("limit %d: not oldest first or not running: %+v", tt.limit, got)
			}
		}
	}
	if _, err := s.ExpiredSandboxes(ctx, 0, bound, 0); err == nil {
		t.Error("limit 0 accepted")
	}
}
