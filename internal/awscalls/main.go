package awscalls

import (
	"flag"
	"fmt"
	"os"
	"testing"
)

// Main runs a test package's tests (from its TestMain), then Keep; it
// returns the exit code for os.Exit.
func Main(m *testing.M, path string, rec *Recorder, vars map[string]string, update *bool) int {
	code := m.Run()
	if code != 0 {
		return code
	}
	if err := Keep(path, rec, vars, *update); err != nil {
		fmt.Fprintln(os.Stderr, "FAIL: AWS calls:", err)
		return 1
	}
	return code
}

// Keep keeps a test package's recording true after its tests ran: after
// a full run (no -run, -skip or -short), CheckFile of the calls rec holds,
// named by Symbolic with vars, against path. A partial run checks
// nothing, since it made only some of the calls. Call it after the flags
// are parsed (after m.Run).
func Keep(path string, rec *Recorder, vars map[string]string, update bool) error {
	for _, name := range []string{"test.run", "test.skip"} {
		if f := flag.Lookup(name); f != nil && f.Value.String() != "" {
			return nil
		}
	}
	if testing.Short() {
		return nil
	}
	return CheckFile(path, Symbolic(rec.Calls(), vars), update)
}
