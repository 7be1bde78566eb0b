package main

import (
	"context"
	"encoding/json"
	"flag"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/commonly/runtime/infra/awslocal/rie"
	"github.com/commonly/runtime/infra/localstack"
	"github.com/commonly/runtime/internal/awscalls"
	"github.com/commonly/runtime/shared/llm/llmtest"
	"github.com/commonly/runtime/shared/sandbox/e2b/e2btest"
	"github.com/commonly/runtime/shared/store"
)

// TestInvokeUnderRuntimeInterfaceEmulator runs the built bootstrap under
// the AWS Lambda Runtime Interface Emulator, exactly as `sam local invoke`
// does inside its container, and invokes it with the SAM-style event files
// in testdata. The embedded DynamoDB is reached by the real SDK through
// AWS_ENDPOINT_URL_DYNAMODB. `make test` builds both binaries and sets
// RIE_BIN and TURN_BOOTSTRAP.
func TestInvokeUnderRuntimeInterfaceEmulator(t *testing.T) {
	rieBin, bootstrap := rie.Binaries(t, os.Getenv, "TURN_BOOTSTRAP")
	ctx := context.Background()
	tables := store.Tables{State: "rie-state", Runs: "rie-runs"}
	// The model is the scripted LiteLLM and the sandbox provider the fake
	// E2B, their keys the stack's way: each a secret's ARN, read once at
	// the cold start.
	const llmKey = "sk-litellm-rie-3c2b1a"
	const llmARN, e2bARN = "arn:aws:secretsmanager:us-east-1:123456789012:secret:llm-AbCdEf", "arn:aws:secretsmanager:us-east-1:123456789012:secret:e2b-GhIjKl"
	model := httptest.NewServer(llmtest.NewServer(llmKey, llmtest.Text("Hello from the scripted model.")))
	defer model.Close()
	e2bFake := e2btest.Start(t)
	// A turn is dispatched as in AWS: the function invokes itself
	// asynchronously, and the Lambda stand-in runs the invocation through
	// the same bootstrap, as Lambda would.
	const fnName = "TurnFunction"
	vars := map[string]string{"STATE_TABLE": tables.State, "RUNS_TABLE": tables.Runs, "TURN_DISPATCH": "lambda",
		"AWS_LAMBDA_FUNCTION_NAME": fnName,
		"LLM_BASE_URL":             model.URL, "LLM_API_KEY_SECRET_ARN": llmARN, "LLM_MODEL": "deepseek-v4-flash",
		"STAGE": "dev", "SANDBOX": "e2b", "E2B_API_KEY_SECRET_ARN": e2bARN, "E2B_API_URL": e2bFake.URL}
	// Every request the stand-ins serve is the bootstrap's (the test
	// makes none of its own).
	var served awscalls.Recorder
	stack := localstack.StartTest(t, localstack.Config{Env: vars, Calls: &served, Emulator: rieBin,
		Secrets: map[string]string{llmARN: llmKey, e2bARN: e2btest.DefaultAPIKey}})
	served.Take() // the tables' creation
	emu, err := stack.Bootstrap(localstack.Turn, bootstrap, nil, nil)
	if err != nil {
		t.Fatal(err)
	}

	invoke := func(name string) map[string]any {
		t.Helper()
		payload, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			t.Fatal(err)
		}
		body, err := emu.Invoke(ctx, payload)
		var out map[string]any
		if err != nil || json.Unmarshal(body, &out) != nil {
			t.Fatalf("invoke %s: %s %v", name, body, err)
		}
		return out
	}
	status := func(out map[string]any) int { n, _ := out["statusCode"].(float64); return int(n) }

	if out := invoke("put-install.json"); status(out) != 201 {
		t.Fatalf("put install: %v", out)
	}
	out := invoke("submit-turn.json")
	if status(out) != 202 {
		t.Fatalf("submit turn: %v", out)
	}
	var accepted map[string]string
	_ = json.Unmarshal([]byte(out["body"].(string)), &accepted)
	if accepted["engine"] != "native" || !strings.HasPrefix(accepted["runId"], "run_") {
		t.Fatalf("accepted: %v", accepted)
	}
	// The replayed idempotency key of the same event returns the same run.
	again := invoke("submit-turn.json")
	var replay map[string]string
	_ = json.Unmarshal([]byte(again["body"].(string)), &replay)
	if replay["runId"] != accepted["runId"] {
		t.Fatalf("replay: %v vs %v", replay, accepted)
	}
	// The one dispatch ran the turn to its end, through the bootstrap.
	stack.Lambda.Wait()
	if invs := stack.Invocations(); len(invs) != 1 || invs[0].Err != nil || !strings.Contains(string(invs[0].Answer), `"succeeded"`) {
		t.Fatalf("the dispatches: %+v", invs)
	}
	if out := invoke("usage.json"); status(out) != 200 || !strings.Contains(out["body"].(string), `"turnsUsed":1`) {
		t.Fatalf("usage: %v", out)
	}
	if out := invoke("no-auth.json"); status(out) != 401 {
		t.Fatalf("no auth: %v", out)
	}
	// The public route answers the OpenAPI document without a token.
	if out := invoke("get-openapi.json"); status(out) != 200 || !strings.Contains(out["body"].(string), `"openapi": "3.1.0"`) {
		t.Fatalf("openapi.json: %v", status(out))
	}
	// The bootstrap's AWS calls, kept in testdata/aws-calls/rie.json
	// (-update rewrites it) for infra/cdk/stack's TestRolesAllowRecordedCalls.
	if err := awscalls.CheckFile("testdata/aws-calls/rie.json", awscalls.Symbolic(served.Calls(), vars), *update); err != nil {
		t.Error(err)
	}
}

var update = flag.Bool("update", false, "rewrite testdata/aws-calls/rie.json from the calls the bootstrap made")
