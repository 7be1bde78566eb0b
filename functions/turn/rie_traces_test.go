package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/commonly/runtime/infra/awslocal/rie"
	"github.com/commonly/runtime/infra/localstack"
	"github.com/commonly/runtime/shared/llm/llmtest"
	"github.com/commonly/runtime/shared/sandbox/e2b/e2btest"
	"github.com/commonly/runtime/shared/store"
	"github.com/commonly/runtime/shared/tracing"
)

// Under the emulator, with traces on, the bootstrap registers the traces
// extension in its init and each invocation's spans reach the collector
// after its answer; the function keeps serving invocations (the
// extension asks for its next event after each export).
func TestTracesLeaveAfterEachAnswerUnderRuntimeInterfaceEmulator(t *testing.T) {
	rieBin, bootstrap := rie.Binaries(t, os.Getenv, "TURN_BOOTSTRAP")
	ctx := context.Background()
	tables := store.Tables{State: "rie-traces-state", Runs: "rie-traces-runs"}
	const llmKey = "sk-litellm-rie-traces-9f8e7d"
	model := httptest.NewServer(llmtest.NewServer(llmKey, llmtest.Text("unused")))
	defer model.Close()
	e2bFake := e2btest.Start(t)
	var exports, bytes atomic.Int64
	collector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n, _ := io.Copy(io.Discard, r.Body)
		if r.URL.Path == "/v1/traces" && r.Header.Get("Content-Type") == "application/x-protobuf" {
			exports.Add(1)
			bytes.Add(n)
		}
		w.Header().Set("Content-Type", "application/x-protobuf")
	}))
	defer collector.Close()

	vars := map[string]string{"STATE_TABLE": tables.State, "RUNS_TABLE": tables.Runs, "AWS_LAMBDA_FUNCTION_NAME": "TurnFunction",
		"LLM_BASE_URL": model.URL, "LLM_API_KEY": llmKey, "LLM_MODEL": "deepseek-v4-flash", "STAGE": "dev",
		"SANDBOX": "e2b", "E2B_API_KEY": e2btest.DefaultAPIKey, "E2B_API_URL": e2bFake.URL,
		"OTEL_EXPORTER_OTLP_ENDPOINT": collector.URL, "TRACES_SAMPLE_RATIO": "1"}
	stack := localstack.StartTest(t, localstack.Config{Env: vars, Emulator: rieBin})
	emu, err := stack.Bootstrap(localstack.Turn, bootstrap, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	payload, err := os.ReadFile(filepath.Join("testdata", "usage.json"))
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		body, err := emu.Invoke(ctx, payload)
		var out map[string]any
		if err != nil || json.Unmarshal(body, &out) != nil || out["statusCode"] != float64(200) {
			t.Fatalf("invoke %d: %s %v", i+1, body, err)
		}
		// The answer comes first; the spans follow it.
		deadline := time.Now().Add(10 * time.Second)
		for exports.Load() < int64(i+1) && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
		if got := exports.Load(); got != int64(i+1) {
			t.Fatalf("after invocation %d the collector got %d exports", i+1, got)
		}
	}
	if bytes.Load() == 0 {
		t.Error("the exports carried no spans")
	}
	if !strings.Contains(emu.Emulator().Output(), "Internal agent "+tracing.ExtensionName) {
		t.Errorf("the emulator did not register the %s extension", tracing.ExtensionName)
	}
}
