package handler_test

import (
	"flag"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/commonly/runtime/api/apitest"
	"github.com/commonly/runtime/internal/awscalls"
)

var update = flag.Bool("update", false, "rewrite ../testdata/aws-calls/handler.json from the calls the function's store made")

// recorded is every AWS call the function's store made in this package's
// tests (the watcher's reads; the tests' own writes go through another
// client).
var recorded awscalls.Recorder

// TestMain keeps ../testdata/aws-calls/handler.json true after a full
// run (-update rewrites it), for the check of the function's role
// against its calls (infra/cdk/stack's TestRolesAllowRecordedCalls, once
// the stack has the function).
//
// After a full run it also requires that every answer of the events
// route other than the stream that api/openapi.yaml documents (each
// status of watchRun, each problem type only this function answers) was
// produced by some test, as the turn handler's tests require of theirs.
func TestMain(m *testing.M) {
	flag.Parse()
	code := awscalls.Main(m, "../testdata/aws-calls/handler.json", &recorded,
		map[string]string{"STATE_TABLE": tables.State, "RUNS_TABLE": tables.Runs}, update)
	if code == 0 && flag.Lookup("test.run").Value.String() == "" && flag.Lookup("test.skip").Value.String() == "" {
		v, err := apitest.Shared()
		if err != nil {
			fmt.Fprintln(os.Stderr, "FAIL:", err)
			os.Exit(1)
		}
		if missing := v.MissingWatch(); len(missing) > 0 {
			fmt.Fprintf(os.Stderr, "FAIL: api/openapi.yaml documents answers of the events route no test produced:\n  %s\n", strings.Join(missing, "\n  "))
			code = 1
		}
	}
	os.Exit(code)
}
