package main

import (
	"os"
	"path/filepath"
	"testing"
)

// Issue 35: a run's temporary log is removed when every invariant held
// (make load-smoke leaves nothing in the temporary directory), kept when
// one failed; a log the caller named is always kept.
func TestTheTemporaryLogGoesWithAGoodRun(t *testing.T) {
	t.Setenv("TMPDIR", t.TempDir())
	for _, ok := range []bool{true, false} {
		f, done, err := openLog("")
		if err != nil {
			t.Fatal(err)
		}
		done(ok)
		if _, err := os.Stat(f.Name()); ok != os.IsNotExist(err) {
			t.Errorf("run ok %v: the log's state %v", ok, err)
		}
	}
	named := filepath.Join(t.TempDir(), "load.jsonl")
	_, done, err := openLog(named)
	if err != nil {
		t.Fatal(err)
	}
	done(true)
	if _, err := os.Stat(named); err != nil {
		t.Errorf("the named log: %v", err)
	}
}
