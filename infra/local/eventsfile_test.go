package main

import (
	"io"
	"os"
	"path/filepath"
	"testing"
)

// Issue 23: make run removes the events file it created when it stops,
// and keeps the one EVENTS_FILE named.
func TestEventsFileRemovedUnlessNamed(t *testing.T) {
	t.Setenv("TMPDIR", t.TempDir())
	a, err := startAlarmBus(localEnv(func(string) string { return "" }), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	created := a.file.Name()
	if _, err := os.Stat(created); err != nil {
		t.Fatalf("the events file was not created: %v", err)
	}
	a.close()
	if _, err := os.Stat(created); !os.IsNotExist(err) {
		t.Errorf("the file the stack created is still there after it stopped: %v", err)
	}

	named := filepath.Join(t.TempDir(), "events.jsonl")
	a, err = startAlarmBus(localEnv(func(k string) string { return map[string]string{"EVENTS_FILE": named}[k] }), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	a.close()
	if _, err := os.Stat(named); err != nil {
		t.Errorf("the file EVENTS_FILE named was removed: %v", err)
	}
}
