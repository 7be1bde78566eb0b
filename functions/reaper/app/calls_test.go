package app_test

import (
	"flag"
	"os"
	"testing"

	"github.com/commonly/runtime/internal/awscalls"
)

var update = flag.Bool("update", false, "rewrite ../testdata/aws-calls/app.json from the calls the function's code made")

// recorded is every AWS call the function's code made in this package's
// tests, through the clients given to app.Build.
var recorded awscalls.Recorder

// TestMain keeps ../testdata/aws-calls/app.json true after a full run
// (-update rewrites it); infra/cdk/stack's TestRolesAllowRecordedCalls
// checks each call against the reaper's role.
func TestMain(m *testing.M) {
	os.Exit(awscalls.Main(m, "../testdata/aws-calls/app.json", &recorded,
		map[string]string{"STATE_TABLE": "state", "RUNS_TABLE": "runs", "TURN_FUNCTION_NAME": "TurnFunction"}, update))
}
