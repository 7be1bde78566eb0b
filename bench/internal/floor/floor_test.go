package floor_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/commonly/runtime/bench/internal/floor"
	"github.com/commonly/runtime/bench/internal/script"
	"github.com/commonly/runtime/bench/internal/turnstack"
	"github.com/commonly/runtime/internal/dynamodblocal"
)

// hostCounter counts the requests a client sends, by host, and their
// answers' status codes.
type hostCounter struct {
	mu     sync.Mutex
	byHost map[string]int
	status map[int]int
}

func (c *hostCounter) RoundTrip(r *http.Request) (*http.Response, error) {
	res, err := http.DefaultTransport.RoundTrip(r)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.byHost[r.URL.Host]++
	if err == nil {
		c.status[res.StatusCode]++
	}
	return res, err
}

func start(t *testing.T, table string) (*floor.Handler, *hostCounter, *script.Server, *url.URL, *url.URL) {
	t.Helper()
	model := &script.Server{}
	llm := httptest.NewServer(model)
	t.Cleanup(llm.Close)
	db, err := dynamodblocal.StartWithTables(context.Background(), "127.0.0.1:0", turnstack.Tables)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	counter := &hostCounter{byHost: map[string]int{}, status: map[int]int{}}
	h := &floor.Handler{
		LLM: llm.URL + "/v1", Dynamo: db.URL, Table: table, Model: turnstack.Model,
		ModelCalls: script.Steps, DynamoCalls: 6, HTTP: &http.Client{Transport: counter},
	}
	h.Init()
	lu, _ := url.Parse(llm.URL)
	du, _ := url.Parse(db.URL)
	return h, counter, model, lu, du
}

func TestFloorMakesTheTurnsCalls(t *testing.T) {
	h, counter, model, llm, db := start(t, turnstack.Tables.State)
	for range 2 {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest(http.MethodPost, "/v1/installs/x/turns", strings.NewReader(`{"message":"hi"}`)))
		if w.Code != http.StatusOK {
			t.Fatalf("status %d: %s", w.Code, w.Body)
		}
	}
	// Two requests: the script's model calls and six DynamoDB calls each,
	// every one answered 200 and none rejected by the scripted model.
	if got := model.Counts(); got.Requests != 2*script.Steps || got.Rejected != 0 {
		t.Errorf("model counts %+v, want %d requests, none rejected", got, 2*script.Steps)
	}
	if counter.byHost[llm.Host] != 2*script.Steps || counter.byHost[db.Host] != 12 {
		t.Errorf("calls by host %v, want %d to the model and 12 to DynamoDB", counter.byHost, 2*script.Steps)
	}
	if counter.status[http.StatusOK] != 2*script.Steps+12 || len(counter.status) != 1 {
		t.Errorf("answers by status %v, want all 200", counter.status)
	}
}

func TestFloorFailsLoudly(t *testing.T) {
	// A table that does not exist: DynamoDB answers 400, and the floor
	// says so instead of answering as though it had made its calls.
	h, _, _, _, _ := start(t, "no-such-table")
	w := httptest.NewRecorder()
	h.ServeHTTP(w, httptest.NewRequest(http.MethodPost, "/", nil))
	if w.Code != http.StatusBadGateway || !strings.Contains(w.Body.String(), "DynamoDB call 1: 400") {
		t.Fatalf("status %d %q, want 502 naming DynamoDB call 1", w.Code, w.Body)
	}
}
