package localstack_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"testing"
	"time"

	"github.com/commonly/runtime/infra/awslocal/apigatewaylocal"
	"github.com/commonly/runtime/infra/awslocal/rie"
	"github.com/commonly/runtime/infra/localstack"
	"github.com/commonly/runtime/shared/llm/llmtest"
	"github.com/commonly/runtime/shared/runs"
	"github.com/commonly/runtime/shared/store"
)

// Issue 34 (Locally as in AWS): a turn's worker runs in a process of its
// own, the production bootstrap under the emulator, which dies mid-turn
// (its model call in flight): killed with SIGKILL, or past the function's
// timeout. The Lambda stand-in retries the failed invocation after its
// delay, as Lambda retries an asynchronous one, a crash or a timeout
// alike, with the same payload; the stack keeps its tables: the run is
// still there for whoever resumes or reaps it. `make test` sets RIE_BIN
// and TURN_BOOTSTRAP.
func TestKilledWorkerIsRetried(t *testing.T) {
	t.Run("killed", func(t *testing.T) { workerDies(t, "Runtime.ExitError", "", (*localstack.Stack).KillWorker) })
	t.Run("timed out", func(t *testing.T) {
		workerDies(t, "Sandbox.Timedout", "2", func(*localstack.Stack) error { return nil })
	})
}

func workerDies(t *testing.T, errorType, timeout string, die func(*localstack.Stack) error) {
	rieBin, bootstrap := rie.Binaries(t, os.Getenv, "TURN_BOOTSTRAP")
	const key = "sk-worker-test"
	model := llmtest.NewServer(key, llmtest.Hang(), llmtest.Text("answered after the retry"))
	model.HangLimit = time.Minute
	secret := []byte("worker-test")
	st := localstack.StartTest(t, localstack.Config{
		Env: map[string]string{"LLM_BASE_URL": "", "LLM_API_KEY": key, "LLM_MODEL": "deepseek-v4-flash", "SANDBOX": "local",
			"AWS_LAMBDA_FUNCTION_TIMEOUT": timeout},
		Functions: []localstack.Function{localstack.Turn}, Model: model, JWTSecret: secret,
		Emulator: rieBin, Worker: bootstrap, RetryDelay: 50 * time.Millisecond,
	})
	ctx := context.Background()
	admin, _ := apigatewaylocal.MintServiceToken(secret, apigatewaylocal.ServiceSubject, time.Now())
	user, _ := apigatewaylocal.MintToken(secret, "u1", nil, time.Hour, time.Now())
	if status, body, err := call(ctx, http.MethodPut, st.APIURL+"/v1/installs/i1", admin, nil, `{"userId":"u1","podId":"p1","agentName":"a"}`); err != nil || status != http.StatusCreated {
		t.Fatalf("install: %d %s %v", status, body, err)
	}
	status, body, err := call(ctx, http.MethodPost, st.APIURL+"/v1/installs/i1/turns", user, nil, `{"message":"hello"}`)
	var run runs.Run
	if err != nil || status != http.StatusAccepted || json.Unmarshal(body, &run) != nil {
		t.Fatalf("turn: %d %s %v", status, body, err)
	}
	// The worker is inside its first model call, which hangs.
	for deadline := time.Now().Add(30 * time.Second); model.Count() == 0; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the worker never called the model")
		}
	}
	if err := die(st); err != nil {
		t.Fatal(err)
	}
	st.Lambda.Wait()
	invs := st.Invocations()
	var fnErr *localstack.FunctionError
	if len(invs) < 2 || !errors.As(invs[0].Err, &fnErr) || fnErr.Type != errorType {
		t.Fatalf("attempts %+v, want a failed one (%s), then a retry", invs, errorType)
	}
	for _, inv := range invs[1:] {
		if string(inv.Payload) != string(invs[0].Payload) {
			t.Errorf("a retry's payload %s, want the first's %s", inv.Payload, invs[0].Payload)
		}
	}
	if gap := invs[1].At.Sub(invs[0].At); gap < 50*time.Millisecond {
		t.Errorf("retried %v after the failure, before the delay", gap)
	}
	sts, err := store.New(store.Config{DB: st.Dynamo(), Tables: st.Tables})
	if err != nil {
		t.Fatal(err)
	}
	if got, err := sts.GetRun(ctx, run.RunID); err != nil || got.Status == "" {
		t.Errorf("the run after the worker's death: %+v %v", got, err)
	}
}
