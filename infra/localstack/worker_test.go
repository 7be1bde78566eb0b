package localstack_test

import (
	"os/exec"
	"path/filepath"

	"context"
	"encoding/json"
	"errors"
	"maps"
	"net/http"
	"os"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	"github.com/aws/aws-sdk-go-v2/service/lambda/types"

	"github.com/commonly/runtime/infra/awslocal/apigatewaylocal"
	"github.com/commonly/runtime/infra/localstack"
	"github.com/commonly/runtime/shared/llm/llmtest"
	"github.com/commonly/runtime/shared/runs"
	"github.com/commonly/runtime/shared/store"
)

// Issue 34 (Locally as in AWS): a turn's worker runs in a process of its
// own, the production bootstrap on the Runtime API stand-in, which dies mid-turn
// (its model call in flight): killed with SIGKILL, or past the function's
// timeout. The Lambda stand-in retries the failed invocation after its
// delay, as Lambda retries an asynchronous one, a crash or a timeout
// alike, with the same payload; the stack keeps its tables: the run is
// still there for whoever resumes or reaps it. `make test` sets
// TURN_BOOTSTRAP.
func TestKilledWorkerIsRetried(t *testing.T) {
	bootstrap := os.Getenv("TURN_BOOTSTRAP")
	if bootstrap == "" {
		t.Skip("TURN_BOOTSTRAP is set by `make test`")
	}
	st, model, run := startWorkerTurn(t, bootstrap, nil, 50*time.Millisecond)
	ctx := context.Background()
	// The worker is inside its first model call, which hangs.
	for deadline := time.Now().Add(30 * time.Second); model.Count() == 0; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the worker never called the model")
		}
	}
	if err := st.KillWorker(); err != nil {
		t.Fatal(err)
	}
	st.Lambda.Wait()
	invs := st.Invocations()
	var fnErr *localstack.FunctionError
	if len(invs) < 2 || !errors.As(invs[0].Err, &fnErr) || fnErr.Type != "Runtime.ExitError" {
		t.Fatalf("attempts %+v, want a failed one (Runtime.ExitError), then a retry", invs)
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

// A worker nearing its function's timeout (7 s here: the turn stops 5 s
// before it) with its model call in flight leaves the run and hands it to
// a new invocation itself: the first invocation succeeds (nothing for
// Lambda to retry; the stand-in's retry delay is a minute) and the next
// attempt, invoked by the worker, takes the run over and finishes it well
// within that minute.
func TestWorkerNearItsTimeoutHandsTheTurnOver(t *testing.T) {
	bootstrap := os.Getenv("TURN_BOOTSTRAP")
	if bootstrap == "" {
		t.Skip("TURN_BOOTSTRAP is set by `make test`")
	}
	st, _, run := startWorkerTurn(t, bootstrap, map[string]string{"AWS_LAMBDA_FUNCTION_TIMEOUT": "7"}, time.Minute)
	ctx := context.Background()
	sts, err := store.New(store.Config{DB: st.Dynamo(), Tables: st.Tables})
	if err != nil {
		t.Fatal(err)
	}
	var got *runs.Run
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if got, err = sts.GetRun(ctx, run.RunID); err == nil && got.Status.Final() {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the run after 30 s: %+v %v (invocations %+v)", got, err, st.Invocations())
		}
	}
	if got.Status != runs.StatusSucceeded || got.Attempts != 2 || len(got.LostAttempts) != 1 || got.LostAttempts[0].InFlight != runs.InFlightModel {
		t.Fatalf("the run: %s, %d attempts, lost %+v", got.Status, got.Attempts, got.LostAttempts)
	}
	st.Lambda.Wait()
	invs := st.Invocations()
	if len(invs) != 2 {
		t.Fatalf("%d invocations, want 2 (the first, then the one it handed the turn to)", len(invs))
	}
	for i, inv := range invs {
		var ev struct {
			Dispatch struct {
				RunID string `json:"runId"`
			} `json:"dispatch"`
		}
		if inv.Err != nil || json.Unmarshal(inv.Payload, &ev) != nil || ev.Dispatch.RunID != run.RunID {
			t.Errorf("invocation %d: %s, %v; want a successful dispatch of %s", i+1, inv.Payload, inv.Err, run.RunID)
		}
	}
}

// startWorkerTurn starts a stack whose turns run in a worker process
// (bootstrap, env over the model's settings) with the Lambda stand-in's
// retryDelay, and a model whose first call hangs and whose next answers;
// it submits one turn and returns the run as admitted.
func startWorkerTurn(t *testing.T, bootstrap string, env map[string]string, retryDelay time.Duration) (*localstack.Stack, *llmtest.Server, runs.Run) {
	t.Helper()
	const key = "sk-worker-test"
	model := llmtest.NewServer(key, llmtest.Hang(), llmtest.Text("answered by the next attempt"))
	model.HangLimit = time.Minute
	secret := []byte("worker-test")
	vars := map[string]string{"LLM_BASE_URL": "", "LLM_API_KEY": key, "LLM_MODEL": "deepseek-v4-flash", "SANDBOX": "local"}
	maps.Copy(vars, env)
	st := localstack.StartTest(t, localstack.Config{
		Env: vars, Functions: []localstack.Function{localstack.Turn}, Model: model, JWTSecret: secret,
		Worker: bootstrap, WorkerLogs: testWriter{t}, RetryDelay: retryDelay,
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
	return st, model, run
}

// A crash and a timeout alike: the function's asynchronous invocation
// fails, and the Lambda stand-in tries it twice more, each in a fresh
// runtime, after its delay; so in the worker's environment (the Runtime
// API stand-in) and in a bootstrap under the emulator (make invoke's
// way: the emulator answers a crash with 502 and a timeout with a line of
// text). The function is the Runtime API stand-in's own test function
// (infra/awslocal/runtimeapi/testdata/fn), told to exit or to sleep past
// the function's one-second timeout.
func TestFailedInvocationIsRetriedTwice(t *testing.T) {
	fn := filepath.Join(t.TempDir(), "bootstrap")
	build := exec.Command("go", "build", "-tags", "lambda.norpc", "-o", fn, "../awslocal/runtimeapi/testdata/fn")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build the test function: %v\n%s", err, out)
	}
	env := map[string]string{"AWS_LAMBDA_FUNCTION_TIMEOUT": "1"}
	t.Run("worker", func(t *testing.T) {
		failsThrice(t, localstack.StartTest(t, localstack.Config{Env: env, Worker: fn, RetryDelay: 20 * time.Millisecond}))
	})
	t.Run("bootstrap under the emulator", func(t *testing.T) {
		rieBin := os.Getenv("RIE_BIN")
		if rieBin == "" {
			t.Skip("RIE_BIN is set by `make test`")
		}
		st := localstack.StartTest(t, localstack.Config{Env: env, Emulator: rieBin, RetryDelay: 20 * time.Millisecond})
		if _, err := st.Bootstrap(localstack.Turn, fn, nil, nil); err != nil {
			t.Fatal(err)
		}
		failsThrice(t, st)
	})
}

func failsThrice(t *testing.T, st *localstack.Stack) {
	ctx := context.Background()
	for _, c := range []struct{ payload, errorType string }{
		{`{"do":"exit"}`, "Runtime.ExitError"},
		{`{"do":"sleep","ms":3000}`, "Sandbox.Timedout"},
	} {
		before := len(st.Invocations())
		if _, err := st.Lambda.Client().Invoke(ctx, &lambda.InvokeInput{FunctionName: aws.String(st.Env["AWS_LAMBDA_FUNCTION_NAME"]),
			InvocationType: types.InvocationTypeEvent, Payload: []byte(c.payload)}); err != nil {
			t.Fatal(err)
		}
		st.Lambda.Wait()
		invs := st.Invocations()[before:]
		if len(invs) != 3 {
			t.Fatalf("%s: %d attempts, want 3 (Lambda's two retries)", c.payload, len(invs))
		}
		for i, inv := range invs {
			var fnErr *localstack.FunctionError
			if !errors.As(inv.Err, &fnErr) || fnErr.Type != c.errorType || string(inv.Payload) != c.payload {
				t.Errorf("%s: attempt %d: %v, want %s", c.payload, i+1, inv.Err, c.errorType)
			}
		}
	}
}

// testWriter logs what it is given in t (a process's output).
type testWriter struct{ t *testing.T }

func (w testWriter) Write(b []byte) (int, error) {
	w.t.Logf("%s", b)
	return len(b), nil
}
