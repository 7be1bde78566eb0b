package main

import (
	"context"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/commonly/runtime/infra/awslocal/rie"
	"github.com/commonly/runtime/infra/localstack"
	"github.com/commonly/runtime/internal/awscalls"
	"github.com/commonly/runtime/shared/ledger"
	"github.com/commonly/runtime/shared/store"
)

// TestInvokeUnderRuntimeInterfaceEmulator runs the built bootstrap under
// the AWS Lambda Runtime Interface Emulator, as `sam local invoke` does,
// with the stream event files in testdata. The real SDK clients reach the
// embedded DynamoDB and the EventBridge stand-in through the standard
// endpoint variables. `make test` builds the bootstrap and sets RIE_BIN
// and ALARM_BOOTSTRAP.
func TestInvokeUnderRuntimeInterfaceEmulator(t *testing.T) {
	rieBin, bootstrap := rie.Binaries(t, os.Getenv, "ALARM_BOOTSTRAP")
	ctx := context.Background()
	tables := store.Tables{State: "rie-state", Runs: "rie-runs"}
	// What the stand-ins serve during each invocation is the function's
	// calls (the test's own reads of the store fall between them).
	var served, calls awscalls.Recorder
	stack := localstack.StartTest(t, localstack.Config{Calls: &served, Emulator: rieBin, Env: map[string]string{
		"STATE_TABLE": tables.State, "RUNS_TABLE": tables.Runs, "EVENT_BUS_NAME": "commonly-alarms",
		// JSON logs, as the stack configures the function's logging.
		"AWS_LAMBDA_LOG_FORMAT": "JSON",
	}})
	bus := stack.Bus
	boot, err := stack.Bootstrap(localstack.Alarm, bootstrap, nil, nil)
	if err != nil {
		t.Fatal(err)
	}

	invoke := func(name string) []string {
		t.Helper()
		payload, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			t.Fatal(err)
		}
		served.Take()
		body, err := boot.Invoke(ctx, payload)
		for _, c := range served.Take() {
			calls.Record(c)
		}
		var out struct {
			BatchItemFailures *[]struct {
				ItemIdentifier string `json:"itemIdentifier"`
			} `json:"batchItemFailures"`
		}
		if err != nil || json.Unmarshal(body, &out) != nil || out.BatchItemFailures == nil {
			t.Fatalf("invoke %s: %s %v", name, body, err)
		}
		ids := []string{}
		for _, f := range *out.BatchItemFailures {
			ids = append(ids, f.ItemIdentifier)
		}
		return ids
	}

	// grace's three turns cross the $2 default: one event, whatever the
	// redeliveries.
	for range 2 {
		if f := invoke("crossing-in-batch.json"); len(f) != 0 {
			t.Fatalf("failures %v", f)
		}
	}
	evs := bus.Events()
	if len(evs) != 1 || evs[0].DetailType != ledger.AlarmDetailType || evs[0].Bus != "commonly-alarms" {
		t.Fatalf("events %+v", evs)
	}
	var detail ledger.Alarm
	if err := json.Unmarshal(evs[0].Detail, &detail); err != nil || detail.UserID != "grace" || detail.CostMicros != 2_700_000 || detail.CostUSD != "2.700000" {
		t.Fatalf("detail %s: %v", evs[0].Detail, err)
	}
	st, err := store.New(store.Config{DB: stack.Dynamo(), Tables: tables})
	if err != nil {
		t.Fatal(err)
	}
	u, err := st.Usage(ctx, "grace", detail.Day)
	if err != nil || u.CostMicros != 2_700_000 {
		t.Fatalf("usage %+v, %v", u, err)
	}
	// A malformed record is skipped, not retried.
	if f := invoke("malformed.json"); len(f) != 0 {
		t.Fatalf("malformed: failures %v", f)
	}
	// EventBridge refusing the entry: the record that crossed the
	// threshold comes back as a batch item failure, and its retry raises.
	if f := invoke("native-turn.json"); len(f) != 0 {
		t.Fatalf("native turn: %v", f)
	}
	bus.FailEntries(1)
	var second struct {
		Records []struct {
			Change struct{ SequenceNumber string } `json:"dynamodb"`
		}
	}
	raw, _ := os.ReadFile(filepath.Join("testdata", "second-turn.json"))
	if err := json.Unmarshal(raw, &second); err != nil {
		t.Fatal(err)
	}
	crossing := second.Records[len(second.Records)-1].Change.SequenceNumber
	if f := invoke("second-turn.json"); !slices.Equal(f, []string{crossing}) {
		t.Fatalf("second turn with the entry refused: failures %v, want [%s]", f, crossing)
	}
	if f := invoke("second-turn.json"); len(f) != 0 || len(bus.Events()) != 2 {
		t.Fatalf("retry: failures %v, %d events", f, len(bus.Events()))
	}
	if out := boot.Emulator().Output(); !strings.Contains(out, `"stream batch"`) || !strings.Contains(out, `"userDays"`) {
		t.Errorf("no JSON batch log line in the function's output")
	}
	// The bootstrap's AWS calls, kept in testdata/aws-calls/rie.json
	// (-update rewrites it) for infra/cdk/stack's TestRolesAllowRecordedCalls.
	if err := awscalls.CheckFile("testdata/aws-calls/rie.json", awscalls.Symbolic(calls.Calls(),
		map[string]string{"STATE_TABLE": tables.State, "EVENT_BUS_NAME": "commonly-alarms"}), *update); err != nil {
		t.Error(err)
	}
}

var update = flag.Bool("update", false, "rewrite testdata/aws-calls/rie.json from the calls the bootstrap made")
