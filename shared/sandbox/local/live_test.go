package local

import (
	"context"
	"errors"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/commonly/runtime/shared/sandbox"
)

// The reaper's view of the local provider (sandbox.Inventory): the
// sessions not killed yet, as one page, with their start and run, all the
// stage's, and a kill by id that tells a live session from one already
// gone.
func TestListAndKillByID(t *testing.T) {
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	now := t0
	p := newProvider(t, Config{Now: func() time.Time { return now }})
	a := create(t, p)
	now = now.Add(time.Minute)
	b := create(t, p)
	want := []sandbox.Listed{{ID: a.ID(), Stage: "dev", RunID: "r", StartedAt: t0}, {ID: b.ID(), Stage: "dev", RunID: "r", StartedAt: t0.Add(time.Minute)}}
	if got := listed(t, p); !slices.Equal(got, want) {
		t.Fatalf("Live = %v, want %v", got, want)
	}

	found, err := p.KillSandbox(context.Background(), a.ID())
	if !found || err != nil {
		t.Fatalf("KillSandbox: %v, %v", found, err)
	}
	if _, err := a.Execute(context.Background(), sandbox.Python, "1"); !errors.Is(err, sandbox.ErrLost) {
		t.Errorf("run after the reaper's kill: %v, want ErrLost", err)
	}
	if _, err := os.Stat(a.Dir()); !os.IsNotExist(err) {
		t.Errorf("session directory remains: %v", err)
	}
	if got := listed(t, p); !slices.Equal(got, want[1:]) {
		t.Errorf("Live after the kill = %v", got)
	}
	if found, err := p.KillSandbox(context.Background(), a.ID()); found || err != nil {
		t.Errorf("second KillSandbox: %v, %v; want not found, no error", found, err)
	}
	if found, err := p.KillSandbox(context.Background(), "local-unknown"); found || err != nil {
		t.Errorf("unknown id: %v, %v", found, err)
	}
	// Killed by its owner: off the list too.
	if err := b.Kill(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := listed(t, p); len(got) != 0 {
		t.Errorf("Live = %v after every session was killed", got)
	}
}

// listed is the provider's one page of stage dev's sessions.
func listed(t *testing.T, p *Provider) []sandbox.Listed {
	t.Helper()
	var pages [][]sandbox.Listed
	for page, err := range p.ListSandboxes(context.Background(), "dev") {
		if err != nil {
			t.Fatal(err)
		}
		pages = append(pages, page)
	}
	if len(pages) != 1 {
		t.Fatalf("%d pages, want 1", len(pages))
	}
	return pages[0]
}
