package usage_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/commonly/runtime/functions/turn/app"
	"github.com/commonly/runtime/infra/awslocal/apigatewaylocal"
	"github.com/commonly/runtime/internal/dynamodblocal"
	"github.com/commonly/runtime/shared/ledger"
	"github.com/commonly/runtime/shared/ledger/ledgertest"
	"github.com/commonly/runtime/shared/runs"
	"github.com/commonly/runtime/shared/store"
	"github.com/commonly/runtime/shared/utcday"
)

// dayOfRuns is a day of turns made by the real turn function (offline
// model, the local bubblewrap sandbox, a fallback runtime that fails) on
// the embedded DynamoDB, counted by the real ledger from the runs stream.
type dayOfRuns struct {
	st   *store.Dynamo
	db   *dynamodblocal.Server
	day  string
	runs []runs.Run // every run, as finally written
}

var tables = store.Tables{State: "report-state", Runs: "report-runs"}

func makeDayOfRuns(t *testing.T) *dayOfRuns {
	t.Helper()
	ctx := context.Background()
	db, err := dynamodblocal.StartWithTables(ctx, "127.0.0.1:0", tables)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	st, err := store.New(store.Config{DB: db.Client(), Tables: tables})
	if err != nil {
		t.Fatal(err)
	}
	var tick atomic.Int64
	start := time.Date(2026, 10, 3, 12, 0, 0, 0, time.UTC)
	// Each reading moves the clock on, so turns take time.
	clock := func() time.Time { return start.Add(time.Duration(tick.Add(1)) * 150 * time.Millisecond) }
	ledgertest.Feed(t, db, tables.Runs, st, clock, runs.StatusSucceeded)

	// The older runtime, down: turns on it fail as fallback_error.
	fallback := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusBadGateway) }))
	t.Cleanup(fallback.Close)
	env := map[string]string{
		"STATE_TABLE": tables.State, "RUNS_TABLE": tables.Runs, "TURN_DISPATCH": app.DispatchInline,
		"EVENT_BUS_NAME": "report-test", "STAGE": "local", "LLM_MODE": app.LLMOffline, "SANDBOX": app.SandboxLocal,
		"DO_RUNTIME_URL": fallback.URL, "DO_RUNTIME_TOKEN": "t", "PLAN_TURN_LIMITS": "free=4,pro=200",
	}
	cfg, err := app.LoadConfig(func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	built, err := app.Build(ctx, cfg, app.Deps{Dynamo: db.Client(), Log: log, Now: clock})
	if err != nil {
		t.Fatal(err)
	}
	secret := []byte("report-test")
	api := httptest.NewServer(&apigatewaylocal.Gateway{Secret: secret, Invoke: built.Handler.HandleHTTP, Log: log})
	t.Cleanup(api.Close)
	admin, _ := apigatewaylocal.MintServiceToken(secret, apigatewaylocal.ServiceSubject, time.Now())
	do := func(method, path, token, body string) (int, []byte) {
		t.Helper()
		req, _ := http.NewRequestWithContext(ctx, method, api.URL+path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Prefer", "wait=20")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, b
	}
	users := []struct {
		id, plan, engine string
		messages         []string
	}{
		{"ada", "free", "native", []string{"hello", "```python\nprint(sum(i*i for i in range(11)))\n```", "what is 2+2?", "once more", "over the ceiling"}},
		{"bob", "pro", "native", []string{"```python\nprint(6*7)\n```", "```js\nconsole.log([1,2,3].length)\n```", "thanks", "a longer question about the weather in the pod today"}},
		{"cy", "free", "durable-object", []string{"hi", "are you there?"}},
	}
	d := &dayOfRuns{st: st, db: db, day: utcday.Of(start)}
	for _, u := range users {
		if status, body := do("PUT", "/v1/users/"+u.id+"/plan", admin, `{"plan":"`+u.plan+`"}`); status != 200 {
			t.Fatalf("plan of %s: %d %s", u.id, status, body)
		}
		inst := fmt.Sprintf(`{"userId":%q,"podId":"pod-%s","agentName":"agent","engine":%q,"tools":["commonly_run_code"]}`, u.id, u.id, u.engine)
		if status, body := do("PUT", "/v1/installs/install-"+u.id, admin, inst); status != 201 {
			t.Fatalf("install of %s: %d %s", u.id, status, body)
		}
		token, _ := apigatewaylocal.MintToken(secret, u.id, nil, time.Hour, time.Now())
		for _, m := range u.messages {
			body, _ := json.Marshal(map[string]string{"message": m})
			status, out := do("POST", "/v1/installs/install-"+u.id+"/turns", token, string(body))
			if status == http.StatusTooManyRequests {
				continue // past the free ceiling: no run
			}
			if status != 200 && status != 201 && status != 202 {
				t.Fatalf("turn of %s: %d %s", u.id, status, out)
			}
		}
	}
	d.runs = scanRuns(t, db.Client())
	d.waitCounted(t)
	return d
}

// scanRuns reads every run: the test's own view of the records, which
// the report itself never reads.
func scanRuns(t *testing.T, c *dynamodb.Client) []runs.Run {
	t.Helper()
	out, err := c.Scan(context.Background(), &dynamodb.ScanInput{TableName: &tables.Runs})
	if err != nil {
		t.Fatal(err)
	}
	var rs []runs.Run
	if err := attributevalue.UnmarshalListOfMaps(out.Items, &rs); err != nil {
		t.Fatal(err)
	}
	for _, r := range rs {
		if !r.Status.Final() {
			t.Fatalf("run %s is %s", r.RunID, r.Status)
		}
	}
	return rs
}

// waitCounted waits until every run's final record is counted on its
// user-day's ledger.
func (d *dayOfRuns) waitCounted(t *testing.T) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		keys := map[ledger.DayKey]bool{}
		for _, r := range d.runs {
			keys[ledger.DayKey{UserID: r.UserID, Day: r.Day}] = true
		}
		var ks []ledger.DayKey
		for k := range keys {
			ks = append(ks, k)
		}
		got, err := d.st.ReadDays(context.Background(), ks)
		if err != nil {
			t.Fatal(err)
		}
		missing := 0
		for _, r := range d.runs {
			if c, ok := got[ledger.DayKey{UserID: r.UserID, Day: r.Day}].Book.Runs[r.RunID]; !ok || c.Facts == nil {
				missing++
			}
		}
		if missing == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d runs never counted", missing, len(d.runs))
		}
		time.Sleep(20 * time.Millisecond)
	}
}
