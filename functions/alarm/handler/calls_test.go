package handler_test

import (
	"os"
	"testing"

	"github.com/commonly/runtime/internal/awscalls"
)

// recorded is every AWS call the function's code made in this package's
// tests, through the harness's clients.
var recorded awscalls.Recorder

// TestMain keeps ../testdata/aws-calls/handler.json true after a full
// run: the AWS calls the code made, each table and bus named by the
// variable it came from (-update rewrites it). infra/cdk/stack's
// TestRolesAllowRecordedCalls checks each against the alarm's role.
func TestMain(m *testing.M) {
	os.Exit(awscalls.Main(m, "../testdata/aws-calls/handler.json", &recorded,
		map[string]string{"STATE_TABLE": harnessTables.State, "EVENT_BUS_NAME": "commonly-alarms"}, update))
}
