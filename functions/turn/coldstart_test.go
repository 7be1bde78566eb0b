package main

import (
	"context"
	"log/slog"
	"strings"
	"testing"
)

// Issue 9, item 3: a deployment that forgets the model's URL or the E2B
// key fails its cold start with an error naming the variable, rather than
// serve the offline model or try the local sandbox in AWS.
func TestColdStartRefusesUnnamedDemoModes(t *testing.T) {
	for _, k := range []string{"LLM_MODE", "SANDBOX", "LLM_BASE_URL", "LLM_API_KEY", "E2B_API_KEY"} {
		t.Setenv(k, "")
	}
	t.Setenv("STATE_TABLE", "s")
	t.Setenv("RUNS_TABLE", "r")
	t.Setenv("AWS_LAMBDA_FUNCTION_NAME", "turn")
	_, err := setup(context.Background(), slog.New(slog.DiscardHandler))
	for _, want := range []string{"LLM_BASE_URL", "E2B_API_KEY"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("cold start: %v, want an error naming %s", err, want)
		}
	}
}
