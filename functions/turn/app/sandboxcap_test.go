package app_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/commonly/runtime/shared/llm/llmtest"
	"github.com/commonly/runtime/shared/runs"
	"github.com/commonly/runtime/shared/sandbox/e2b/e2btest"
	"github.com/commonly/runtime/shared/store"
)

// SANDBOX_MAX_CONCURRENT wired end to end: a code turn holds the cap's
// one slot and frees it when its sandbox is killed, so the next turn
// runs code too; with the slot held elsewhere, the turn still succeeds,
// the model told that code execution is at capacity and no sandbox
// made. Its calls (the slot's Query, Put, Delete) are recorded for the
// stack's grants (aws-calls/app.json, TestRolesAllowRecordedCalls).
func TestCodeTurnUnderTheSandboxCap(t *testing.T) {
	fake := e2btest.Start(t)
	fake.OnExecute(func(_, _, _ string, w *e2btest.StreamWriter) { w.Stdout("42\n") })
	env := e2bEnv(fake)
	env["SANDBOX_MAX_CONCURRENT"] = "1"
	code := llmtest.Calls(llmtest.Call("commonly_run_code", `{"language":"python","code":"print(6*7)"}`))
	s := newStackWith(t, env, code, llmtest.Text("It is 42."), code, llmtest.Text("It is 42."), code, llmtest.Text("No code today."))
	s.install(t, `{"userId":"user-1","podId":"pod-1","agentName":"calc","tools":["commonly_run_code"]}`)
	for i := range 2 {
		run := s.turn(t, pythonBlock)
		if tc := run.Steps[0].ToolCalls[0]; run.Status != runs.StatusSucceeded || !tc.OK {
			t.Fatalf("turn %d under the cap: %s, tool call %+v", i+1, run.Status, tc)
		}
	}
	if n := len(fake.Creates()); n != 2 {
		t.Fatalf("%d sandboxes created, want 2", n)
	}
	// Another turn holds the one slot.
	st, err := store.New(store.Config{DB: s.db, Tables: s.cfg.Tables})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	if _, err := st.AcquireSlot(context.Background(), 1, "run-elsewhere", now, now.Add(time.Hour)); err != nil {
		t.Fatalf("the slot after two turns: %v (not freed)", err)
	}
	run := s.turn(t, pythonBlock)
	tc := run.Steps[0].ToolCalls[0]
	if run.Status != runs.StatusSucceeded || tc.OK || !strings.Contains(tc.Error, "at capacity") || tc.CodeRun == nil || tc.CodeRun.ExitKind != "rejected" {
		t.Fatalf("at the cap: %s, tool call %+v", run.Status, tc)
	}
	if n := len(fake.Creates()); n != 2 {
		t.Errorf("%d sandboxes created at the cap, want still 2", n)
	}
}
