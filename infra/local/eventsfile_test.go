package main

import (
	"os"
	"path/filepath"
	"testing"
)

// Issue 23: make run removes the events file it created when it stops,
// and keeps the one EVENTS_FILE named.
func TestEventsFileRemovedUnlessNamed(t *testing.T) {
	t.Setenv("TMPDIR", t.TempDir())
	f, err := openEventsFile("")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(f.path); err != nil {
		t.Fatalf("the events file was not created: %v", err)
	}
	f.close()
	if _, err := os.Stat(f.path); !os.IsNotExist(err) {
		t.Errorf("the file the stack created is still there after it stopped: %v", err)
	}

	named := filepath.Join(t.TempDir(), "events.jsonl")
	if err := os.WriteFile(named, []byte("{}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err = openEventsFile(named)
	if err != nil {
		t.Fatal(err)
	}
	f.close()
	if _, err := os.Stat(named); err != nil {
		t.Errorf("the file EVENTS_FILE named was removed: %v", err)
	}
}
