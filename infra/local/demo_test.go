package main

import (
	"strings"
	"testing"

	"github.com/commonly/runtime/shared/runs"
)

// The demo shows which model and sandbox served the run, as the run
// records them, so nobody takes the offline model for LiteLLM.
func TestDemoPrintsWhatServedTheRun(t *testing.T) {
	for _, c := range []struct {
		run  runs.Run
		want string
	}{
		{runs.Run{RunID: "r1", Status: runs.StatusSucceeded, Engine: "native", Model: "offline", Sandbox: "local"}, "engine native  model offline  sandbox local"},
		{runs.Run{RunID: "r2", Status: runs.StatusSucceeded, Engine: "durable-object"}, "engine durable-object  model none  sandbox none"},
	} {
		var out strings.Builder
		printRun(&out, &c.run)
		if !strings.Contains(out.String(), c.want) {
			t.Errorf("printed %q, want it to say %q", out.String(), c.want)
		}
	}
}
