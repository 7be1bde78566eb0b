package main

import (
	"context"
	"encoding/json"
	"flag"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/commonly/runtime/functions/reaper/handler"
	"github.com/commonly/runtime/infra/awslocal/rie"
	"github.com/commonly/runtime/infra/localstack"
	"github.com/commonly/runtime/internal/awscalls"
	"github.com/commonly/runtime/shared/runs"
	"github.com/commonly/runtime/shared/sandbox"
	"github.com/commonly/runtime/shared/sandbox/e2b"
	"github.com/commonly/runtime/shared/sandbox/e2b/e2btest"
	"github.com/commonly/runtime/shared/store"
	"github.com/commonly/runtime/shared/turns"
	"github.com/commonly/runtime/shared/utcday"
)

// TestInvokeUnderRuntimeInterfaceEmulator runs the built bootstrap under
// the AWS Lambda Runtime Interface Emulator, as `sam local invoke` does,
// with the SAM-style scheduled event in testdata: the real SDK reaches
// the embedded DynamoDB through AWS_ENDPOINT_URL_DYNAMODB and the E2B
// client the fake E2B through E2B_API_URL. One sweep kills this stage's
// expired sandboxes (listed, and recorded only), spares the young and
// another stage's, and closes an abandoned run with its sandbox; with
// neither E2B nor DynamoDB answering, the invocation fails. `make test`
// builds the bootstrap and sets RIE_BIN and REAPER_BOOTSTRAP.
func TestInvokeUnderRuntimeInterfaceEmulator(t *testing.T) {
	rieBin, bootstrap := rie.Binaries(t, os.Getenv, "REAPER_BOOTSTRAP")
	ctx := context.Background()
	tables := store.Tables{State: "rie-state", Runs: "rie-runs"}
	f := e2btest.Start(t)
	// The E2B key comes as the stack gives it, a secret's ARN read at
	// the cold start.
	const keyARN = "arn:aws:secretsmanager:us-east-1:123456789012:secret:e2b-GhIjKl"
	vars := map[string]string{
		"STAGE": "dev", "STATE_TABLE": tables.State, "RUNS_TABLE": tables.Runs, "SANDBOX": "e2b",
		"E2B_API_KEY_SECRET_ARN": keyARN, "E2B_API_URL": f.URL,
		// JSON logs, as the stack configures the function's logging.
		"AWS_LAMBDA_LOG_FORMAT": "JSON",
	}
	var served awscalls.Recorder
	stack := localstack.StartTest(t, localstack.Config{Env: vars, Calls: &served, Emulator: rieBin,
		Secrets: map[string]string{keyARN: e2btest.DefaultAPIKey}})
	st, err := store.New(store.Config{DB: stack.Dynamo(), Tables: tables})
	if err != nil {
		t.Fatal(err)
	}

	// The bootstrap runs on the real clock.
	now := time.Now().UTC()
	ours := func(runID string, started time.Time) string {
		return f.Seed(e2btest.Seeded{StartedAt: started, EndAt: now.Add(time.Hour), Metadata: e2b.Metadata("dev", runID, "u", "i", started.Add(sandbox.Lifetime))})
	}
	expired := ours("run-a", now.Add(-10*time.Minute))
	young := ours("run-b", now.Add(-time.Minute))
	other := f.Seed(e2btest.Seeded{StartedAt: now.Add(-time.Hour), EndAt: now.Add(time.Hour), Metadata: e2b.Metadata("prod", "r", "u", "i", now)})
	// Recorded, gone from E2B: a 404, its record marked.
	if err := st.SandboxCreated(ctx, sandbox.NewRecord(e2b.ProviderName, "sbx-recorded-only", sandbox.Meta{RunID: "run-c"}, now.Add(-10*time.Minute))); err != nil {
		t.Fatal(err)
	}
	// A turn whose worker died six minutes ago, with its young-looking
	// sandbox (created late in the turn) still running at E2B.
	admitted := now.Add(-6 * time.Minute)
	run := &runs.Run{RunID: "run-abandoned", InstallID: "i", UserID: "u", Status: runs.StatusQueued, Day: utcday.Of(admitted),
		CreatedAt: admitted, Message: "m", RequestHash: "h", Engine: "native", Steps: []runs.Step{}}
	if res, err := st.Admit(ctx, turns.Admission{Plan: turns.PlanFree, Run: run, Limit: 30, Now: admitted}); err != nil || !res.Admitted {
		t.Fatalf("admit: %+v, %v", res, err)
	}
	if _, err := st.ClaimRun(ctx, run.RunID, admitted.Add(time.Second)); err != nil {
		t.Fatal(err)
	}
	runSandbox := ours(run.RunID, now.Add(-20*time.Second))
	if err := st.SandboxCreated(ctx, sandbox.NewRecord(e2b.ProviderName, runSandbox, sandbox.Meta{RunID: run.RunID, UserID: "u"}, now.Add(-20*time.Second))); err != nil {
		t.Fatal(err)
	}

	served.Take() // the test's own writes
	boot, err := stack.Bootstrap(localstack.Reaper, bootstrap, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	payload, err := os.ReadFile(filepath.Join("testdata", "scheduled.json"))
	if err != nil {
		t.Fatal(err)
	}

	body, err := boot.Invoke(ctx, payload)
	// What the stand-ins served up to here is the bootstrap's: its cold
	// start and one sweep. Kept in testdata/aws-calls/rie.json (-update
	// rewrites it) for infra/cdk/stack's TestRolesAllowRecordedCalls.
	if err := awscalls.CheckFile("testdata/aws-calls/rie.json", awscalls.Symbolic(served.Take(), vars), *update); err != nil {
		t.Error(err)
	}
	var res handler.Result
	if err != nil || json.Unmarshal(body, &res) != nil {
		t.Fatalf("invoke: %s %v", body, err)
	}
	want := handler.Result{Listed: 3, Expired: 2, Killed: 2, AlreadyGone: 1, RunsInterrupted: 1, RunsRefunded: 1}
	if res != want {
		t.Fatalf("result %+v, want %+v", res, want)
	}
	for id, alive := range map[string]bool{expired: false, runSandbox: false, young: true, other: true} {
		if _, ok := f.Sandbox(id); ok != alive {
			t.Errorf("%s: alive %v, want %v", id, ok, alive)
		}
	}
	got, err := st.GetRun(ctx, run.RunID)
	if err != nil || got.Status != runs.StatusInterrupted || got.ErrorKind != runs.ErrInterrupted || !got.Refunded {
		t.Fatalf("the abandoned run: %+v, %v", got, err)
	}
	out := boot.Emulator().Output()
	for _, want := range []string{`"reaper sweep"`, `"SandboxesKilled":2`, `"RunsInterrupted":1`} {
		if !strings.Contains(out, want) {
			t.Errorf("the function's output lacks %s", want)
		}
	}
	if strings.Contains(out, e2btest.DefaultAPIKey) {
		t.Error("the E2B key reached the output")
	}

	// Neither source readable: E2B refuses the list and DynamoDB is gone.
	// The invocation fails, so the schedule's alarm counts it.
	f.FailListAfter(0, http.StatusInternalServerError)
	_ = stack.DB.Close()
	body, err = boot.Invoke(ctx, payload)
	if (err == nil && !strings.Contains(string(body), "errorMessage")) || !strings.Contains(string(body)+errString(err), "no source could be read") {
		t.Fatalf("a sweep without sources: %s %v", body, err)
	}
}

var update = flag.Bool("update", false, "rewrite testdata/aws-calls/rie.json from the calls the bootstrap made")

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
