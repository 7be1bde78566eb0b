package awscalls

import (
	"flag"
	"fmt"
	"os"
	"testing"
)

// Main runs a test package's tests (from its TestMain) and then keeps its
// recording true: after a full run that passed (no -run, -skip or
// -short), CheckFile of the calls rec holds, named by Symbolic with vars,
// against path (update is read after the flags are parsed). It returns the exit code for os.Exit. A partial run
// checks nothing, since it made only some of the calls.
func Main(m *testing.M, path string, rec *Recorder, vars map[string]string, update *bool) int {
	code := m.Run()
	if code != 0 || !fullRun() {
		return code
	}
	if err := CheckFile(path, Symbolic(rec.Calls(), vars), *update); err != nil {
		fmt.Fprintln(os.Stderr, "FAIL: AWS calls:", err)
		return 1
	}
	return code
}

func fullRun() bool {
	for _, name := range []string{"test.run", "test.skip"} {
		if f := flag.Lookup(name); f != nil && f.Value.String() != "" {
			return false
		}
	}
	return !testing.Short()
}
