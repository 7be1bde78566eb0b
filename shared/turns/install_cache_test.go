package turns

import (
	"context"
	"testing"
	"time"
)

// installReads serves one install and counts the reads.
type installReads struct {
	Store
	in    Install
	reads int
}

func (s *installReads) GetInstall(context.Context, string) (*Install, error) {
	s.reads++
	return s.in.Clone(), nil
}

// The cache hands out copies: a caller that changes the install it got,
// lists and migration included, changes nothing that later turns read.
func TestInstallCacheHandsOutCopies(t *testing.T) {
	tools := []string{"commonly_run_code"}
	st := &installReads{in: Install{InstallID: "i1", UserID: "u1", Tools: &tools, Connectors: []string{"github"},
		Migration: &Migration{From: Native, To: DurableObject, State: MigrationInProgress}}}
	now := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	c := newCache(t, InstallCacheConfig{Store: st, TTL: time.Minute, Now: func() time.Time { return now }})

	first, err := c.get(context.Background(), "i1")
	if err != nil {
		t.Fatal(err)
	}
	(*first.Tools)[0], first.Connectors[0], first.Migration.State, first.UserID = "x", "x", MigrationDone, "x"
	again, err := c.get(context.Background(), "i1")
	if err != nil {
		t.Fatal(err)
	}
	if st.reads != 1 {
		t.Fatalf("%d store reads, want 1 (the second from the cache)", st.reads)
	}
	if (*again.Tools)[0] != "commonly_run_code" || again.Connectors[0] != "github" || again.Migration.State != MigrationInProgress || again.UserID != "u1" {
		t.Errorf("the cached install changed through a caller's copy: %+v %v %+v", *again.Tools, again.Connectors, *again.Migration)
	}
	if again.Tools == first.Tools || again.Migration == first.Migration {
		t.Error("two reads share pointers")
	}
}

func TestInstallCacheExpiresAndEvicts(t *testing.T) {
	st := &installReads{in: Install{InstallID: "i1"}}
	now := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	c := newCache(t, InstallCacheConfig{Store: st, TTL: time.Minute, Now: func() time.Time { return now }})
	ctx := context.Background()
	for range 2 {
		if _, err := c.get(ctx, "i1"); err != nil {
			t.Fatal(err)
		}
	}
	now = now.Add(time.Minute) // the TTL is over at its end
	if _, err := c.get(ctx, "i1"); err != nil || st.reads != 2 {
		t.Fatalf("after the TTL: %d reads, %v", st.reads, err)
	}
	c.evict("i1")
	if _, err := c.get(ctx, "i1"); err != nil || st.reads != 3 {
		t.Fatalf("after evict: %d reads, %v", st.reads, err)
	}

	off := newCache(t, InstallCacheConfig{Store: st})
	for range 2 {
		if _, err := off.get(ctx, "i1"); err != nil {
			t.Fatal(err)
		}
	}
	if st.reads != 5 {
		t.Errorf("a zero TTL caches: %d reads, want 5", st.reads)
	}
}

func newCache(t *testing.T, cfg InstallCacheConfig) *InstallCache {
	t.Helper()
	c, err := NewInstallCache(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestNewInstallCacheChecksItsConfig(t *testing.T) {
	if _, err := NewInstallCache(InstallCacheConfig{TTL: time.Second}); err == nil {
		t.Error("a cache without a store was built")
	}
	if _, err := NewInstallCache(InstallCacheConfig{Store: &installReads{}, TTL: -time.Second}); err == nil {
		t.Error("a negative TTL was accepted")
	}
}
