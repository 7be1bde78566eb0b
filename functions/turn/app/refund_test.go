package app_test

import (
	"encoding/json"
	"testing"

	"github.com/commonly/runtime/shared/llm/llmtest"
	"github.com/commonly/runtime/shared/runs"
	"github.com/commonly/runtime/shared/sandbox/e2b/e2btest"
)

// Issue 9, item 1: a turn is refunded only for an infrastructure failure
// before any model call answered (runs.RefundDue). A sandbox lost after
// two paid model calls and a post to the pod is paid for and counts: with
// E2B, code that kills its own interpreter ends the stream like a lost
// sandbox, so a refund here would make turns free of the ceiling.
func TestSandboxLostAfterModelOutputIsNotRefunded(t *testing.T) {
	fake := e2btest.Start(t)
	fake.OnExecute(func(_, _, _ string, w *e2btest.StreamWriter) {
		w.Stdout("partial")
		w.KillSandbox()
	})
	s := newStackWith(t, e2bEnv(fake),
		llmtest.Calls(llmtest.Call("commonly_post_message", `{"content":"working on it"}`)),
		llmtest.Calls(llmtest.Call("commonly_run_code", `{"language":"python","code":"import os; os._exit(0)"}`)),
		llmtest.Text("unused"),
	)
	s.install(t, `{"userId":"user-1","podId":"pod-1","agentName":"calc","tools":["commonly_post_message","commonly_run_code"]}`)
	run := s.turn(t, pythonBlock)
	if run.Status != runs.StatusFailed || run.ErrorKind != runs.ErrSandbox {
		t.Fatalf("run = %s %s %q", run.Status, run.ErrorKind, run.ErrorMessage)
	}
	if len(run.Steps) != 2 || !run.PostedToPod || run.Refunded {
		t.Fatalf("model calls %d, postedToPod %v, refunded %v: a turn that reached the model is not refunded",
			len(run.Steps), run.PostedToPod, run.Refunded)
	}
	u := s.call(t, apiEvent("GET", "/v1/me/usage", "user-1", false, "", nil))
	var usage map[string]any
	_ = json.Unmarshal([]byte(u.Body), &usage)
	// The turn counts; its cost is on the run, which the alarm
	// function's ledger adds to the day.
	if usage["turnsUsed"] != 1.0 || run.CostMicros <= 0 {
		t.Errorf("usage = %v, run cost %d: the turn must count and its cost be recorded", usage, run.CostMicros)
	}
}
