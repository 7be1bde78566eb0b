package main

import (
	"strings"
	"testing"

	"github.com/commonly/runtime/internal/dynamodblocal"
)

// make run prints the command that renders the local stack's report: it
// names the state table and points the SDK at the embedded DynamoDB.
func TestReportCommandPointsAtTheLocalStack(t *testing.T) {
	cmd := reportCommand("commonly-state", dynamodblocal.AWSEnv("http://127.0.0.1:4567"))
	for _, want := range []string{"STATE_TABLE=commonly-state ", dynamodblocal.EndpointVar + "=http://127.0.0.1:4567", " make report"} {
		if !strings.Contains(cmd, want) {
			t.Errorf("%q lacks %q", cmd, want)
		}
	}
}
