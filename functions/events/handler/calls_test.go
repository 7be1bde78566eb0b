package handler_test

import (
	"flag"
	"os"
	"testing"

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
func TestMain(m *testing.M) {
	os.Exit(awscalls.Main(m, "../testdata/aws-calls/handler.json", &recorded,
		map[string]string{"STATE_TABLE": tables.State, "RUNS_TABLE": tables.Runs}, update))
}
