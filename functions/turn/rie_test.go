package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/commonly/runtime/infra/awslocal/dynamodblocal"
	"github.com/commonly/runtime/infra/awslocal/rie"
	"github.com/commonly/runtime/shared/store"
)

// TestInvokeUnderRuntimeInterfaceEmulator runs the built bootstrap under
// the AWS Lambda Runtime Interface Emulator, exactly as `sam local invoke`
// does inside its container, and invokes it with the SAM-style event files
// in testdata. The embedded DynamoDB is reached by the real SDK through
// AWS_ENDPOINT_URL_DYNAMODB. `make test` builds both binaries and sets
// RIE_BIN and TURN_BOOTSTRAP.
func TestInvokeUnderRuntimeInterfaceEmulator(t *testing.T) {
	rieBin, bootstrap := os.Getenv("RIE_BIN"), os.Getenv("TURN_BOOTSTRAP")
	if rieBin == "" || bootstrap == "" {
		t.Skip("RIE_BIN and TURN_BOOTSTRAP are set by `make test`")
	}
	ctx := context.Background()
	tables := store.Tables{State: "rie-state", Runs: "rie-runs"}
	db, err := dynamodblocal.StartWithTables(ctx, "127.0.0.1:0", tables)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()

	emu, err := rie.Start(rieBin, bootstrap, rie.Env(t.TempDir(), db.AWSEnv(),
		map[string]string{"STATE_TABLE": tables.State, "RUNS_TABLE": tables.Runs, "TURN_DISPATCH": "inline",
			// The demo model and sandbox, by name: without them the function
			// refuses to start (no LLM_BASE_URL, no E2B_API_KEY).
			"LLM_MODE": "offline", "SANDBOX": "local"}), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		_ = emu.Close()
		if t.Failed() {
			t.Logf("emulator output:\n%s", emu.Output())
		}
	}()

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
}
