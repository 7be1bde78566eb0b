package handler_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/commonly/runtime/api/apitest"
	"github.com/commonly/runtime/functions/events/handler"
	"github.com/commonly/runtime/internal/dynamodblocal"
	"github.com/commonly/runtime/shared/runs"
	"github.com/commonly/runtime/shared/store"
	"github.com/commonly/runtime/shared/syncbuf"
	"github.com/commonly/runtime/shared/turns"
	"github.com/commonly/runtime/shared/utcday"
)

var tables = store.Tables{State: "state", Runs: "runs"}

// tokens stand for verified JWTs: "Bearer <sub>[ admin]"; "Bearer
// expired" and "Bearer forged" are refused as a verifier refuses them.
var verifier = handler.VerifierFunc(func(_ context.Context, auth string) (map[string]string, error) {
	raw, ok := strings.CutPrefix(auth, "Bearer ")
	switch {
	case !ok:
		return nil, errors.New("no token")
	case raw == "expired":
		return nil, turns.ErrTokenExpired
	case raw == "forged":
		return nil, errors.New("crypto/rsa: verification error")
	}
	sub, admin, _ := strings.Cut(raw, " ")
	claims := map[string]string{"sub": sub}
	if admin == "admin" {
		claims["scope"] = turns.ServiceScope
	}
	return claims, nil
})

type rig struct {
	st  *store.Dynamo
	srv *httptest.Server
	now time.Time
	log *syncbuf.Buffer
}

type rigOpts struct {
	// perUser caps each user's open streams (zero: the default).
	perUser   int
	heartbeat time.Duration
	// wrap, when set, serves the handler through what it returns.
	wrap func(http.Handler) http.Handler
}

func newRig(t *testing.T, opts ...rigOpts) *rig {
	t.Helper()
	var o rigOpts
	if len(opts) > 0 {
		o = opts[0]
	}
	if o.heartbeat == 0 {
		o.heartbeat = 20 * time.Millisecond
	}
	db, err := dynamodblocal.StartWithTables(context.Background(), "127.0.0.1:0", tables)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	st, err := store.New(store.Config{DB: db.Client(), Tables: tables})
	if err != nil {
		t.Fatal(err)
	}
	// The function's own reads and writes go through a recorded client;
	// the test's writes (standing in for the worker) do not.
	fn, err := store.New(store.Config{DB: db.Client(func(o *dynamodb.Options) { o.APIOptions = append(o.APIOptions, recorded.APIOption) }), Tables: tables})
	if err != nil {
		t.Fatal(err)
	}
	logs := &syncbuf.Buffer{}
	log := slog.New(slog.NewJSONHandler(logs, nil))
	w, err := turns.NewWatcher(turns.WatcherConfig{Runs: fn, Slots: fn, StreamsPerUser: o.perUser, Log: log})
	if err != nil {
		t.Fatal(err)
	}
	h, err := handler.New(handler.Config{Watcher: w, Verifier: verifier, Poll: 5 * time.Millisecond, Heartbeat: o.heartbeat, Log: log})
	if err != nil {
		t.Fatal(err)
	}
	var served http.Handler = h
	if o.wrap != nil {
		served = o.wrap(h)
	}
	srv := httptest.NewServer(served)
	t.Cleanup(srv.Close)
	return &rig{st: st, srv: srv, now: time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC), log: logs}
}

// running admits and claims a run of user-1 with events recorded so far.
func (r *rig) running(t *testing.T, id string) (*runs.Run, *runs.EventLog) {
	t.Helper()
	ctx := context.Background()
	run := &runs.Run{RunID: id, InstallID: "i1", UserID: "user-1", Status: runs.StatusQueued, Day: utcday.Of(r.now), CreatedAt: r.now, Message: "hi", RequestHash: "h", Steps: []runs.Step{}}
	if _, err := r.st.Admit(ctx, turns.Admission{Plan: turns.PlanFree, Run: run, Limit: 30, Now: r.now}); err != nil {
		t.Fatal(err)
	}
	claimed, err := r.st.ClaimRun(ctx, id, r.now)
	if err != nil {
		t.Fatal(err)
	}
	log := runs.NewEventLog(nil, func() time.Time { return r.now }, nil)
	log.Record(runs.RunStarted{Engine: "native"})
	log.Record(runs.ModelStarted{Step: 0, Model: "m"})
	log.Record(runs.ModelFinished{Step: 0, Model: "m", PromptTokens: 10, CompletionTokens: 2, CostMicros: 5, FinishReason: "tool_calls"})
	log.Record(runs.ToolStarted{Step: 0, CallID: "c1", Name: "commonly_run_code", Args: `{"code":"print(1)"}`})
	log.Record(runs.SandboxCreated{SandboxID: "sb-1", Provider: "local"})
	log.Record(runs.ToolOutput{Step: 0, CallID: "c1", Stream: "stdout", Text: "1\n"})
	if err := r.st.SaveRunEvents(ctx, id, claimed.Attempts, claimed.Lease, log.Snapshot()); err != nil {
		t.Fatal(err)
	}
	return claimed, log
}

// finish ends the run with the rest of its events, as the worker does:
// its worker stopped during the code run, and another attempt resumed it.
func (r *rig) finish(t *testing.T, run *runs.Run, log *runs.EventLog) {
	t.Helper()
	log.Record(runs.RunResumed{Attempt: 2, Lost: 1, InFlight: runs.InFlightTool})
	log.Record(runs.ToolFinished{Step: 0, CallID: "c1", Name: "commonly_run_code", OK: true, Output: `{"stdout":"1\n"}`})
	log.Record(runs.TextDelta{Step: 1, Text: "it printed 1"})
	log.Record(runs.ModelFinished{Step: 1, Model: "m", PromptTokens: 20, CompletionTokens: 4, CostMicros: 9, FinishReason: "stop"})
	log.Record(runs.SandboxKilled{SandboxID: "sb-1", OK: true})
	run.Events = log.Snapshot()
	run.Tokens.Add(30, 0, 6)
	run.AddCost(runs.Cost{ModelMicros: 14})
	run.FinalMessage = "it printed 1"
	run.End(runs.StatusSucceeded, "", "", r.now)
	if err := r.st.FinishRun(context.Background(), run, false); err != nil {
		t.Fatal(err)
	}
}

type event struct {
	id   int64
	typ  string
	data map[string]any
}

// get sends the events request; after > 0 sets Last-Event-ID.
func (r *rig) get(t *testing.T, ctx context.Context, token, id string, after int64) *http.Response {
	t.Helper()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, r.srv.URL+"/v1/runs/"+id+"/events", nil)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if after > 0 {
		req.Header.Set("Last-Event-ID", strconv.FormatInt(after, 10))
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// read opens the stream and parses it until it ends; n > 0 stops after n
// events (a cut connection). An answer other than the stream is checked
// against the document.
func (r *rig) read(t *testing.T, token, id string, after int64, n int) ([]event, *http.Response, int) {
	t.Helper()
	return r.readBeating(t, token, id, after, n, nil)
}

// readBeating is read, closing beat (when not nil) at the stream's first
// heartbeat.
func (r *rig) readBeating(t *testing.T, token, id string, after int64, n int, beat chan struct{}) ([]event, *http.Response, int) {
	t.Helper()
	resp := r.get(t, context.Background(), token, id, after)
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(resp.Body)
		if err := apitest.Default(t).ValidateWatchResponse(resp.StatusCode, resp.Header, body); err != nil {
			t.Errorf("OpenAPI contract: %v\n%s", err, body)
		}
		return nil, resp, 0
	}
	var out []event
	beats := 0
	var cur event
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			if cur.typ != "" {
				out = append(out, cur)
				if n > 0 && len(out) == n {
					return out, resp, beats
				}
			}
			cur = event{}
		case line == ": open":
		case strings.HasPrefix(line, ":"):
			if beats++; beats == 1 && beat != nil {
				close(beat)
			}
		case strings.HasPrefix(line, "id: "):
			cur.id, _ = strconv.ParseInt(line[4:], 10, 64)
		case strings.HasPrefix(line, "event: "):
			cur.typ = line[7:]
		case strings.HasPrefix(line, "data: "):
			if err := json.Unmarshal([]byte(line[6:]), &cur.data); err != nil {
				t.Errorf("data %q: %v", line, err)
			}
			// Every event's data against the document's schema of its type.
			if err := apitest.Default(t).ValidateEvent(cur.typ, []byte(line[6:])); err != nil {
				t.Errorf("OpenAPI contract: %v", err)
			}
		}
	}
	return out, resp, beats
}

// A finished run replays every event and closes, run.finished last with
// the run's values; after a cut at any point, Last-Event-ID resumes with
// no gap and no duplicate.
func TestFinishedRunReplaysAndResumes(t *testing.T) {
	r := newRig(t)
	run, log := r.running(t, "run-1")
	r.finish(t, run, log)
	all, resp, _ := r.read(t, "user-1", "run-1", 0, 0)
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" || resp.Header.Get("Cache-Control") != "no-cache" {
		t.Fatalf("%d %v", resp.StatusCode, resp.Header)
	}
	want := []string{"run.started", "model.started", "model.finished", "tool.started", "sandbox.created", "tool.output", "run.resumed", "tool.finished", "text.delta", "model.finished", "sandbox.killed", "run.finished"}
	if len(all) != len(want) {
		t.Fatalf("%d events: %+v", len(all), all)
	}
	for i, e := range all {
		if e.typ != want[i] || e.id != int64(i+1) || e.data["type"] != e.typ || e.data["id"] != float64(e.id) {
			t.Fatalf("event %d: %+v", i, e)
		}
	}
	seen := map[string]bool{}
	for _, e := range all {
		seen[e.typ] = true
	}
	for _, typ := range apitest.Default(t).EventTypes() {
		if !seen[typ] {
			t.Errorf("the document's event type %s was not shown", typ)
		}
	}
	fin := all[len(all)-1].data
	if fin["status"] != "succeeded" || fin["costMicros"] != 14.0 || fin["finalMessage"] != "it printed 1" {
		t.Errorf("run.finished %v", fin)
	}
	for cut := range int64(len(all) + 1) {
		rest, resp, _ := r.read(t, "user-1", "run-1", cut, 0)
		if len(rest) != len(all)-int(cut) {
			t.Fatalf("after %d: %d events", cut, len(rest))
		}
		// The reader that has run.finished is told to stop: 204.
		if want := map[bool]int{true: 204, false: 200}[cut == int64(len(all))]; resp.StatusCode != want {
			t.Fatalf("after %d: %d, want %d", cut, resp.StatusCode, want)
		}
		for i, e := range rest {
			if e.id != all[int(cut)+i].id || e.typ != all[int(cut)+i].typ {
				t.Fatalf("after %d: %+v", cut, rest)
			}
		}
	}
}

// Two readers on a running run, cut and resumed, each get every event
// once; the stream that is open when the run finishes ends with
// run.finished; heartbeats keep it open meanwhile.
func TestReadersOfARunThatFinishes(t *testing.T) {
	r := newRig(t)
	run, log := r.running(t, "run-2")
	type result struct {
		evs   []event
		beats int
	}
	res := make([]result, 2)
	beating := []chan struct{}{make(chan struct{}), make(chan struct{})}
	var wg sync.WaitGroup
	for i := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// Cut after two events, then resume from the second.
			first, _, _ := r.read(t, "user-1", "run-2", 0, 2)
			rest, _, beats := r.readBeating(t, "user-1", "run-2", first[1].id, 0, beating[i])
			res[i] = result{append(first, rest...), beats}
		}()
	}
	// The run finishes once both resumed streams have been kept open by a
	// heartbeat.
	for _, b := range beating {
		select {
		case <-b:
		case <-time.After(30 * time.Second):
			t.Fatal("a resumed stream had no heartbeat")
		}
	}
	r.finish(t, run, log)
	wg.Wait()
	for i, got := range res {
		if len(got.evs) != 12 || got.evs[11].typ != "run.finished" || got.beats == 0 {
			t.Fatalf("reader %d: %d events, %d beats: %+v", i, len(got.evs), got.beats, got.evs)
		}
		for j, e := range got.evs {
			if e.id != int64(j+1) {
				t.Fatalf("reader %d: ids %+v", i, got.evs)
			}
		}
	}
}

// Someone else's run and a missing run are 404; no token is 401; a
// service token reads any run; a bad Last-Event-ID is 400, told only to
// a caller with a valid token; ids ahead of the store still end with
// run.finished, and the largest id a reader may claim does not wrap.
func TestForeignMissingAndUnauthenticated(t *testing.T) {
	r := newRig(t)
	run, log := r.running(t, "run-3")
	r.finish(t, run, log)
	for _, c := range []struct {
		token, id string
		status    int
	}{{"user-2", "run-3", 404}, {"user-1", "run-missing", 404}, {"", "run-3", 401}, {"backend admin", "run-3", 200}} {
		evs, resp, _ := r.read(t, c.token, c.id, 0, 0)
		if resp.StatusCode != c.status || (c.status != 200 && (len(evs) != 0 || resp.Header.Get("Content-Type") != "application/problem+json")) {
			t.Errorf("%q reading %s: %d %s", c.token, c.id, resp.StatusCode, resp.Header.Get("Content-Type"))
		}
	}
	for _, c := range []struct {
		token, lastEventID string
		status             int
		slug, challenge    string
	}{
		{"user-1", "x", 400, "invalid_field", ""},
		{"user-1", "9007199254740992", 400, "invalid_field", ""},
		{"", "x", 401, "unauthenticated", `Bearer realm="commonly"`},
		{"forged", "x", 401, "unauthenticated", `Bearer realm="commonly", error="invalid_token"`},
		{"expired", "x", 401, "unauthenticated", `Bearer realm="commonly", error="invalid_token", error_description="The access token expired"`},
	} {
		req, _ := http.NewRequest(http.MethodGet, r.srv.URL+"/v1/runs/run-3/events", nil)
		if c.token != "" {
			req.Header.Set("Authorization", "Bearer "+c.token)
		}
		req.Header.Set("Last-Event-ID", c.lastEventID)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != c.status || !strings.Contains(string(b), c.slug) || resp.Header.Get("WWW-Authenticate") != c.challenge {
			t.Errorf("%q with Last-Event-ID %q: %d %q %s", c.token, c.lastEventID, resp.StatusCode, resp.Header.Get("WWW-Authenticate"), b)
		}
		if err := apitest.Default(t).ValidateWatchResponse(resp.StatusCode, resp.Header, b); err != nil {
			t.Errorf("OpenAPI contract: %v", err)
		}
	}
	// Ahead of the store (a close cut the stored events back): the end
	// still comes, after the reader's id, up to the largest id.
	for _, after := range []int64{15, turns.MaxEventID} {
		evs, resp, _ := r.read(t, "user-1", "run-3", after, 0)
		if resp.StatusCode != 200 || len(evs) != 1 || evs[0].typ != "run.finished" || evs[0].id != after+1 {
			t.Errorf("after %d: %d %+v", after, resp.StatusCode, evs)
		}
	}
}

// A stream on a run with nothing new sends its headers, its retry field
// and a first comment at once, not at the first event or heartbeat.
func TestStreamOpensAtOnce(t *testing.T) {
	r := newRig(t, rigOpts{heartbeat: time.Hour})
	_, log := r.running(t, "run-5")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp := r.get(t, ctx, "user-1", "run-5", log.LastID())
	defer resp.Body.Close()
	br := bufio.NewReader(resp.Body)
	var first string
	for range 3 {
		line, err := br.ReadString('\n')
		if err != nil {
			t.Fatalf("after %q: %v", first, err)
		}
		first += line
	}
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" || first != "retry: 1000\n: open\n\n" {
		t.Fatalf("%d %v %q", resp.StatusCode, resp.Header, first)
	}
}

// Each user may hold perUser streams open; one more is 429 with
// Retry-After, until one closes; the service is not capped.
func TestStreamsPerUserAreCapped(t *testing.T) {
	r := newRig(t, rigOpts{perUser: 2, heartbeat: time.Hour})
	_, log := r.running(t, "run-6")
	open := func(token string) (*http.Response, context.CancelFunc) {
		ctx, cancel := context.WithCancel(context.Background())
		resp := r.get(t, ctx, token, "run-6", log.LastID())
		if resp.StatusCode == 200 {
			// Wait for the stream to begin: its slot is held by then.
			if _, err := bufio.NewReader(resp.Body).ReadString('\n'); err != nil {
				t.Fatal(err)
			}
		}
		return resp, cancel
	}
	var cancels []context.CancelFunc
	defer func() {
		for _, c := range cancels {
			c()
		}
	}()
	for range 2 {
		resp, cancel := open("user-1")
		cancels = append(cancels, cancel)
		if resp.StatusCode != 200 {
			t.Fatalf("a stream within the cap: %d", resp.StatusCode)
		}
	}
	resp, cancel := open("user-1")
	b, _ := io.ReadAll(resp.Body)
	cancel()
	if resp.StatusCode != 429 || !strings.Contains(string(b), "too_many_streams") || resp.Header.Get("Retry-After") == "" {
		t.Fatalf("one past the cap: %d %v %s", resp.StatusCode, resp.Header, b)
	}
	if err := apitest.Default(t).ValidateWatchResponse(resp.StatusCode, resp.Header, b); err != nil {
		t.Errorf("OpenAPI contract: %v", err)
	}
	// The service is not held to user-1's cap, nor to one of its own.
	for _, token := range []string{"backend admin", "backend admin", "backend admin"} {
		resp, cancel := open(token)
		cancels = append(cancels, cancel)
		if resp.StatusCode != 200 {
			t.Fatalf("%s: %d", token, resp.StatusCode)
		}
	}
	// A stream that closes frees its place.
	cancels[0]()
	deadline := time.Now().Add(5 * time.Second)
	for {
		resp, cancel := open("user-1")
		cancels = append(cancels, cancel)
		if resp.StatusCode == 200 {
			break
		}
		resp.Body.Close()
		if time.Now().After(deadline) {
			t.Fatalf("a closed stream's place was not freed: %d", resp.StatusCode)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// A client that leaves a stream is an INFO line, not an ERROR.
func TestAClientLeavingIsNotAnError(t *testing.T) {
	r := newRig(t, rigOpts{heartbeat: time.Hour})
	_, log := r.running(t, "run-7")
	ctx, cancel := context.WithCancel(context.Background())
	resp := r.get(t, ctx, "user-1", "run-7", log.LastID())
	if _, err := bufio.NewReader(resp.Body).ReadString('\n'); err != nil {
		t.Fatal(err)
	}
	cancel()
	resp.Body.Close()
	deadline := time.Now().Add(5 * time.Second)
	for !strings.Contains(r.log.String(), "left by the client") {
		if time.Now().After(deadline) {
			t.Fatalf("no line for the client's leaving:\n%s", r.log.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	if strings.Contains(r.log.String(), `"level":"ERROR"`) {
		t.Errorf("an ERROR line:\n%s", r.log.String())
	}
}

// A stream ends before the invocation's deadline, without run.finished:
// the client resumes.
func TestStreamClosesBeforeTheDeadline(t *testing.T) {
	r := newRig(t)
	_, _ = r.running(t, "run-4")
	w, _ := turns.NewWatcher(turns.WatcherConfig{Runs: r.st})
	h, _ := handler.New(handler.Config{Watcher: w, Verifier: verifier, Poll: 5 * time.Millisecond, Margin: time.Second, Log: slog.New(slog.DiscardHandler)})
	req := httptest.NewRequest(http.MethodGet, "/v1/runs/run-4/events", nil)
	req.Header.Set("Authorization", "Bearer user-1")
	ctx, cancel := context.WithTimeout(context.Background(), 1300*time.Millisecond)
	defer cancel()
	rec := httptest.NewRecorder()
	start := time.Now()
	h.ServeHTTP(rec, req.WithContext(ctx))
	if took := time.Since(start); took > 1200*time.Millisecond || rec.Code != 200 {
		t.Fatalf("stream took %s, status %d", took, rec.Code)
	}
	body := rec.Body.String()
	if !strings.Contains(body, "event: tool.started") || strings.Contains(body, "run.finished") || !strings.HasPrefix(body, "retry: ") {
		t.Fatalf("body %q", body)
	}
}

// failingRuns is a store that cannot be reached.
type failingRuns struct{}

func (failingRuns) GetRun(context.Context, string) (*runs.Run, error) {
	return nil, errors.New("dial tcp: connection refused")
}

// A store that cannot be reached is 503 with Retry-After, and a panic a
// 500, each an ERROR line; neither shows its internal text.
func TestFailuresAreProblems(t *testing.T) {
	w, err := turns.NewWatcher(turns.WatcherConfig{Runs: failingRuns{}})
	if err != nil {
		t.Fatal(err)
	}
	panicky := handler.VerifierFunc(func(_ context.Context, auth string) (map[string]string, error) {
		if auth == "Bearer panic" {
			panic("a verifier bug")
		}
		return verifier(context.Background(), auth)
	})
	var logs syncbuf.Buffer
	h, err := handler.New(handler.Config{Watcher: w, Verifier: panicky, Log: slog.New(slog.NewJSONHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	for token, want := range map[string]int{"user-1": 503, "panic": 500} {
		req := httptest.NewRequest(http.MethodGet, "/v1/runs/run-1/events", nil)
		req.Header.Set("Authorization", "Bearer "+token)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		body := rec.Body.String()
		if rec.Code != want || strings.Contains(body, "connection refused") || strings.Contains(body, "verifier bug") {
			t.Errorf("%s: %d %s", token, rec.Code, body)
		}
		if err := apitest.Default(t).ValidateWatchResponse(rec.Code, rec.Header(), rec.Body.Bytes()); err != nil {
			t.Errorf("OpenAPI contract: %v", err)
		}
	}
	if n := strings.Count(logs.String(), `"level":"ERROR"`); n != 2 {
		t.Errorf("%d ERROR lines:\n%s", n, logs.String())
	}
}
