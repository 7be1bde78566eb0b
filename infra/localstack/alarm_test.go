package localstack_test

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/commonly/runtime/infra/awslocal/apigatewaylocal"
	"github.com/commonly/runtime/infra/awslocal/eventbridgelocal"
	"github.com/commonly/runtime/infra/localstack"
	"github.com/commonly/runtime/shared/ledger"
	"github.com/commonly/runtime/shared/runs"
)

// TestSpendControlsThroughTheLocalStack runs the stack as `make run` wires
// it: turns through the gateway and the turn handler, their runs' stream
// records through the embedded event source mapping to the alarm
// handler, its events through the EventBridge stand-in into its file.
// A turn's cost reaches the day once; the alarm is raised once; with a
// spend cap the next turn is refused until the next UTC day.
func TestSpendControlsThroughTheLocalStack(t *testing.T) {
	ctx := context.Background()
	eventsFile := filepath.Join(t.TempDir(), "events.jsonl")
	var mu sync.Mutex
	now := time.Date(2026, 12, 2, 23, 58, 0, 0, time.UTC)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	batches := make(chan struct{}, 100)
	secret := []byte("local-stack-test")
	// A cap of $0.00633, just above the least useful reservation of the
	// offline model ($0.006309): the first turn reserves all of it and
	// spends about $0.00004 (no pod tools in its prompt), which leaves too little for a second.
	st := start(t, localstack.Config{
		Env:       map[string]string{"LLM_MODE": "offline", "SANDBOX": "local", "DAILY_SPEND_ALARM_USD": "0.00001", "DAILY_SPEND_CAP_USD": "0.00633"},
		Functions: localstack.All, Now: clock, JWTSecret: secret,
		EventBridge: eventbridgelocal.Config{EventsFile: eventsFile},
		Faults: localstack.Faults{Stream: func(next localstack.StreamHandler) localstack.StreamHandler {
			return func(ctx context.Context, ev events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
				defer func() { batches <- struct{}{} }()
				return next(ctx, ev)
			}
		}},
	})
	api := struct{ URL string }{st.APIURL}
	admin, _ := apigatewaylocal.MintServiceToken(secret, apigatewaylocal.ServiceSubject, time.Now())
	user, _ := apigatewaylocal.MintToken(secret, "demo-user", nil, time.Hour, time.Now())
	if status, body, err := call(ctx, "PUT", api.URL+"/v1/installs/demo-install", admin, nil, `{"userId":"demo-user","podId":"demo-pod","agentName":"demo-agent"}`); err != nil || status != 201 {
		t.Fatalf("install: %d %s %v", status, body, err)
	}
	turn := func(msg string) (int, []byte) {
		t.Helper()
		status, body, err := call(ctx, "POST", api.URL+"/v1/installs/demo-install/turns", user, map[string]string{"Prefer": "wait=20"}, mustJSON(map[string]string{"message": msg}))
		if err != nil {
			t.Fatal(err)
		}
		return status, body
	}
	usage := func() map[string]any {
		t.Helper()
		status, body, err := call(ctx, "GET", api.URL+"/v1/me/usage", user, nil, "")
		var u map[string]any
		if err != nil || status != 200 || json.Unmarshal(body, &u) != nil {
			t.Fatalf("usage: %d %s %v", status, body, err)
		}
		return u
	}
	// waitCounted waits, batch by batch, until the day's cost is want and
	// its alarm marked.
	waitCounted := func(want float64) map[string]any {
		t.Helper()
		for {
			if u := usage(); u["costMicros"] == want && u["spendAlarmRaised"] == true {
				return u
			}
			select {
			case <-batches:
			case <-time.After(10 * time.Second):
				t.Fatalf("the day's cost never reached %v: %v", want, usage())
			}
		}
	}

	status, body := turn("hello")
	var run runs.Run
	if status != 200 || json.Unmarshal(body, &run) != nil || run.Status != runs.StatusSucceeded || run.CostMicros <= 10 {
		t.Fatalf("first turn: %d %s", status, body)
	}
	u := waitCounted(float64(run.CostMicros))
	if u["spendCapUSD"] != 0.00633 || u["turnsUsed"] != 1.0 || u["reservedMicros"] != 0.0 {
		t.Errorf("usage after the first turn: %v", u)
	}

	// The cap refuses the next turn, before counting it.
	status, body = turn("again")
	var p map[string]any
	if status != 429 || json.Unmarshal(body, &p) != nil || p["type"] != "https://commonly.dev/problems/spend_cap_reached" || p["spentMicros"] != float64(run.CostMicros) {
		t.Fatalf("over the cap: %d %s", status, body)
	}
	// One alarm event in EVENTS_FILE, for the demo user's day.
	evs := readEvents(t, eventsFile)
	if len(evs) != 1 || evs[0].DetailType != ledger.AlarmDetailType {
		t.Fatalf("events %+v", evs)
	}
	var detail ledger.Alarm
	if err := json.Unmarshal(evs[0].Detail, &detail); err != nil || detail.UserID != "demo-user" || detail.Day != "2026-12-02" || detail.ThresholdMicros != 10 {
		t.Fatalf("detail %s: %v", evs[0].Detail, err)
	}

	// Midnight UTC lifts the cap.
	mu.Lock()
	now = time.Date(2026, 12, 3, 0, 0, 1, 0, time.UTC)
	mu.Unlock()
	if status, body := turn("a new day"); status != 200 {
		t.Fatalf("the next day: %d %s", status, body)
	}
	if u := usage(); u["day"] != "2026-12-03" || u["turnsUsed"] != 1.0 {
		t.Errorf("usage on the next day: %v", u)
	}
}

type event struct {
	DetailType string          `json:"detail-type"`
	Detail     json.RawMessage `json:"detail"`
}

func readEvents(t *testing.T, path string) []event {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []event
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var e event
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			t.Fatalf("line %q: %v", sc.Text(), err)
		}
		out = append(out, e)
	}
	return out
}
