package app_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/commonly/runtime/shared/llm/llmtest"
	"github.com/commonly/runtime/shared/runs"
	"github.com/commonly/runtime/shared/sandbox"
	"github.com/commonly/runtime/shared/sandbox/e2b/e2btest"
)

const pythonBlock = "what is 6*7?\n```python\nprint(6*7)\n```"

func e2bEnv(f *e2btest.Fake) map[string]string {
	c := f.ClientConfig()
	return map[string]string{"STAGE": c.Stage, "SANDBOX": "e2b", "E2B_API_KEY": c.APIKey, "E2B_API_URL": c.APIURL, "E2B_SANDBOX_URL": c.SandboxURL}
}

// sandboxRecords reads the ledger rows the turn wrote for the reaper.
func (s *stack) sandboxRecords(t *testing.T) []sandbox.Record {
	t.Helper()
	out, err := s.db.Scan(context.Background(), &dynamodb.ScanInput{TableName: aws.String(s.cfg.Tables.State)})
	if err != nil {
		t.Fatal(err)
	}
	var recs []sandbox.Record
	for _, item := range out.Items {
		if _, ok := item["sandboxId"]; !ok {
			continue
		}
		var r sandbox.Record
		if err := attributevalue.UnmarshalMap(item, &r); err != nil {
			t.Fatal(err)
		}
		recs = append(recs, r)
	}
	return recs
}

func TestCodeTurnThroughTheE2BClient(t *testing.T) {
	fake := e2btest.Start(t)
	fake.OnExecute(func(_, lang, code string, w *e2btest.StreamWriter) {
		if lang == "python" && code == "print(6*7)" {
			w.Stdout("42\n")
		}
	})
	s := newStackWith(t, e2bEnv(fake),
		llmtest.Calls(llmtest.Call("commonly_run_code", `{"language":"python","code":"print(6*7)"}`)),
		llmtest.Text("It is 42."),
	)
	s.install(t, `{"userId":"user-1","podId":"pod-1","agentName":"calc","tools":["commonly_run_code"]}`)
	run := s.turn(t, pythonBlock)
	if run.Status != runs.StatusSucceeded || len(run.Steps) != 2 {
		t.Fatalf("run = %s %s %q", run.Status, run.ErrorKind, run.ErrorMessage)
	}
	tc := run.Steps[0].ToolCalls[0]
	if !tc.OK || tc.CodeRun == nil || tc.CodeRun.ExitKind != "ok" || tc.CodeRun.Language != "python" || tc.CodeRun.SandboxID == "" {
		t.Fatalf("tool call = %+v", tc)
	}
	if msgs := s.llm.Requests()[1].Body.Messages; msgs[len(msgs)-1].Text() == "" || !json.Valid([]byte(msgs[len(msgs)-1].Text())) {
		t.Errorf("tool result to the model: %v", msgs[len(msgs)-1])
	}
	creates := fake.Creates()
	if len(creates) != 1 {
		t.Fatalf("%d creates", len(creates))
	}
	b := creates[0].Body
	env, _ := b["envVars"].(map[string]any)
	meta, _ := b["metadata"].(map[string]any)
	if b["timeout"] != 180.0 || b["allow_internet_access"] != false || env == nil || len(env) != 0 || b["secure"] != true ||
		b["autoPause"] != false || meta["runId"] != run.RunID || meta["userId"] != "user-1" || meta["installId"] != "inst-1" ||
		meta["app"] != "commonly-turns" || meta["stage"] != e2btest.DefaultStage {
		t.Errorf("create body = %v", b)
	}
	if fake.Alive() != 0 || len(fake.Kills()) != 1 || fake.Kills()[0] != tc.CodeRun.SandboxID {
		t.Errorf("sandbox left running: alive %d, kills %v", fake.Alive(), fake.Kills())
	}
	recs := s.sandboxRecords(t)
	if len(recs) != 1 || recs[0].Status != sandbox.StatusKilled || recs[0].RunID != run.RunID || !recs[0].ExpiresAt.Equal(recs[0].CreatedAt.Add(sandbox.Lifetime)) {
		t.Errorf("ledger = %+v", recs)
	}
	if run.Cost.SandboxMicros <= 0 || run.CostMicros != run.Cost.ModelMicros+run.Cost.SandboxMicros+run.Cost.SearchMicros {
		t.Errorf("sandbox time must be priced: %+v", run.Cost)
	}
	s.assertNoSecrets(t)
}

func TestNoPathLeavesASandboxRunning(t *testing.T) {
	cases := []struct {
		name     string
		after    llmtest.Step // the model's answer after the code ran
		lose     bool         // the sandbox vanishes during the run
		status   runs.Status
		kind     runs.ErrorKind
		refunded bool
	}{
		{"model error after the run", llmtest.ServerError(500), false, runs.StatusFailed, runs.ErrLLM, false},
		{"guardrail after the run", llmtest.Guardrail("blocked"), false, runs.StatusFailed, runs.ErrGuardrailBlocked, false},
		// The model answered (it asked for the code), so the turn counts
		// (runs.RefundDue; TestSandboxLostAfterModelOutputIsNotRefunded).
		{"sandbox lost mid-turn", llmtest.Text("unused"), true, runs.StatusFailed, runs.ErrSandbox, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			fake := e2btest.Start(t)
			fake.OnExecute(func(_, _, _ string, w *e2btest.StreamWriter) {
				if c.lose {
					w.Stdout("partial")
					w.KillSandbox()
					return
				}
				w.Stdout("ok\n")
			})
			s := newStackWith(t, e2bEnv(fake),
				llmtest.Calls(llmtest.Call("commonly_run_code", `{"language":"python","code":"print('ok')"}`)),
				c.after,
			)
			s.install(t, `{"userId":"user-1","podId":"pod-1","agentName":"calc","tools":["commonly_run_code"]}`)
			run := s.turn(t, pythonBlock)
			if run.Status != c.status || run.ErrorKind != c.kind || run.Refunded != c.refunded {
				t.Fatalf("run = %s %s refunded=%v %q", run.Status, run.ErrorKind, run.Refunded, run.ErrorMessage)
			}
			if fake.Alive() != 0 {
				t.Errorf("%d sandboxes still alive", fake.Alive())
			}
			if c.lose && len(s.llm.Requests()) != 1 {
				t.Errorf("a lost sandbox must not be fed back to the model as a code error")
			}
			u := s.call(t, apiEvent("GET", "/v1/me/usage", "user-1", false, "", nil))
			var usage map[string]any
			_ = json.Unmarshal([]byte(u.Body), &usage)
			want := 1.0
			if c.refunded {
				want = 0
			}
			if usage["turnsUsed"] != want {
				t.Errorf("turnsUsed = %v, want %v", usage["turnsUsed"], want)
			}
		})
	}
}

func TestCodeTurnThroughTheLocalSandbox(t *testing.T) {
	s := newStackWith(t, nil,
		llmtest.Calls(llmtest.Call("commonly_run_code", `{"language":"python","code":"import os\nprint(6*7, len(os.environ.get('LLM_API_KEY','')))"}`)),
		llmtest.Text("done"),
	)
	t.Setenv("LLM_API_KEY", llmKey) // in the host environment; the sandbox must not see it
	s.install(t, `{"userId":"user-1","podId":"pod-1","agentName":"calc","tools":["commonly_run_code"]}`)
	run := s.turn(t, pythonBlock)
	tc := run.Steps[0].ToolCalls[0]
	if run.Status != runs.StatusSucceeded || !tc.OK || tc.CodeRun == nil || tc.CodeRun.ExitKind != "ok" {
		t.Fatalf("run = %s %q, tool %+v", run.Status, run.ErrorMessage, tc)
	}
	result := s.llm.Requests()[1].Body.Messages
	if got := result[len(result)-1].Text(); !strings.Contains(got, `42 0\n`) {
		t.Errorf("the model got %q, want the real output 42 0", got)
	}
	if recs := s.sandboxRecords(t); len(recs) != 1 || recs[0].Status != sandbox.StatusKilled || recs[0].Provider != "local" {
		t.Errorf("ledger = %+v", recs)
	}
}
