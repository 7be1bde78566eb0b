package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/commonly/runtime/infra/awslocal/cognitolocal"
	"github.com/commonly/runtime/infra/awslocal/rie"
	"github.com/commonly/runtime/infra/awslocal/runtimeapi"
	"github.com/commonly/runtime/internal/dynamodblocal"
	"github.com/commonly/runtime/shared/runs"
	"github.com/commonly/runtime/shared/store"
	"github.com/commonly/runtime/shared/turns"
	"github.com/commonly/runtime/shared/utcday"
)

// TestStreamsOnTheLambdaWire runs the events bootstrap as `make build`
// builds it (-tags lambda.norpc) against a Runtime API of our own, which
// shows the response as it arrives (the emulator reads it whole), and
// invokes it with a function URL event while the test writes the run's
// events, as the worker does, in another process's stead. It asserts
// what Lambda's RESPONSE_STREAM mode relies on: the post's content type
// (application/vnd.awslambda.http-integration-response), chunked
// transfer with the error trailers declared, the prelude and its 8 NUL
// bytes, and that each event arrives before the next is written (the
// next is written only once the last was seen: a buffered response
// would never end). `make test` builds the bootstrap and sets
// EVENTS_BOOTSTRAP.
func TestStreamsOnTheLambdaWire(t *testing.T) {
	bootstrap := os.Getenv("EVENTS_BOOTSTRAP")
	if bootstrap == "" {
		t.Skip("EVENTS_BOOTSTRAP is set by `make test`")
	}
	ctx := context.Background()
	tables := store.Tables{State: "wire-state", Runs: "wire-runs"}
	// The function's calls are recorded by the handler's tests
	// (testdata/aws-calls/handler.json): the same code, the same calls.
	db, err := dynamodblocal.NewWithTables(ctx, dynamodblocal.Config{}, tables)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	st, err := store.New(store.Config{DB: db.Client(), Tables: tables})
	if err != nil {
		t.Fatal(err)
	}
	pool, err := cognitolocal.Start("commonly-turns")
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	api, err := runtimeapi.Start(runtimeapi.Config{FunctionName: "EventsFunction", Timeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	defer api.Close()
	vars := map[string]string{"STATE_TABLE": tables.State, "RUNS_TABLE": tables.Runs, "JWT_ISSUER": pool.URL, "JWT_AUDIENCE": pool.ClientID}
	rt, err := api.StartRuntime(bootstrap, rie.Env(t.TempDir(), db.AWSEnv(), vars), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		_ = rt.Close()
		if t.Failed() {
			t.Logf("bootstrap output:\n%s", rt.Output())
		}
	}()

	// A running run with its first event, as the worker leaves it.
	now := time.Now().UTC()
	run := &runs.Run{RunID: "run-wire", InstallID: "i1", UserID: "user-1", Status: runs.StatusQueued, Day: utcday.Of(now), CreatedAt: now, Message: "hi", RequestHash: "h", Steps: []runs.Step{}}
	if _, err := st.Admit(ctx, turns.Admission{Plan: turns.PlanFree, Run: run, Limit: 30, Now: now}); err != nil {
		t.Fatal(err)
	}
	claimed, err := st.ClaimRun(ctx, run.RunID, now)
	if err != nil {
		t.Fatal(err)
	}
	log := runs.NewEventLog(nil, nil, nil)
	log.Record(runs.RunStarted{Engine: "native"})
	if err := st.SaveRunEvents(ctx, run.RunID, claimed.Attempts, claimed.Lease, log.Snapshot()); err != nil {
		t.Fatal(err)
	}

	token, err := pool.AccessToken("user-1", nil, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	payload, err := json.Marshal(events.LambdaFunctionURLRequest{
		Version: "2.0", RawPath: "/v1/runs/run-wire/events",
		Headers: map[string]string{"authorization": "Bearer " + token, "accept": "text/event-stream", "host": "abc.lambda-url.us-east-1.on.aws"},
		RequestContext: events.LambdaFunctionURLRequestContext{
			AccountID: "123456789012", RequestID: "wire-1", DomainName: "abc.lambda-url.us-east-1.on.aws", APIID: "abc",
			HTTP: events.LambdaFunctionURLRequestContextHTTPDescription{Method: "GET", Path: "/v1/runs/run-wire/events", Protocol: "HTTP/1.1", SourceIP: "203.0.113.9"},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	call := api.Invoke(runtimeapi.Invocation{Payload: payload})

	// Read the chunks as they come; write event N+1 only once event N's
	// chunk is in, so each event is written after the one before it
	// reached the Runtime API.
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	const last = 7 // stored events; run.finished is 8
	var body []byte
	var eventChunks []string
	seen := int64(0)
	for ch, err := range call.Chunks(wctx) {
		if err != nil {
			t.Fatalf("after %q: %v", body, err)
		}
		body = append(body, ch.Data...)
		if !bytes.HasPrefix(ch.Data, []byte("id: ")) {
			continue
		}
		eventChunks = append(eventChunks, string(ch.Data))
		var id int64
		if _, err := fmt.Sscanf(string(ch.Data), "id: %d\n", &id); err != nil || id != seen+1 {
			t.Fatalf("chunk %q after event %d", ch.Data, seen)
		}
		seen = id
		switch {
		case log.LastID() < last:
			// The next event, written after this one arrived.
			log.Record(runs.ModelStarted{Step: int(id), Model: "m"})
			if err := st.SaveRunEvents(ctx, run.RunID, claimed.Attempts, claimed.Lease, log.Snapshot()); err != nil {
				t.Fatal(err)
			}
		case id == last:
			claimed.Events = log.Snapshot()
			claimed.End(runs.StatusSucceeded, "", "", time.Now())
			if err := st.FinishRun(ctx, claimed, false); err != nil {
				t.Fatal(err)
			}
		}
	}
	o, err := call.Wait(wctx)
	if err != nil {
		t.Fatal(err)
	}

	if o.Kind != runtimeapi.KindResponse || o.ErrorType != "" {
		t.Fatalf("outcome %s %q: %v", o.Kind, o.ErrorType, o.Err)
	}
	if ct := o.Header.Get("Content-Type"); ct != "application/vnd.awslambda.http-integration-response" {
		t.Errorf("content type %q", ct)
	}
	if !slices.Equal(o.TransferEncoding, []string{"chunked"}) {
		t.Errorf("transfer encoding %v", o.TransferEncoding)
	}
	if !slices.Equal(o.DeclaredTrailers, []string{runtimeapi.HeaderErrorBody, runtimeapi.HeaderErrorType}) || o.Trailer.Get(runtimeapi.HeaderErrorType) != "" {
		t.Errorf("trailers declared %v, sent %v", o.DeclaredTrailers, o.Trailer)
	}
	// aws-lambda-go sends no response-mode header: Lambda streams by the
	// function URL's invoke mode (docs/operations.md).
	if m := o.Header.Get(runtimeapi.HeaderResponseMode); m != "" {
		t.Errorf("%s: %q", runtimeapi.HeaderResponseMode, m)
	}
	prelude, stream, ok := bytes.Cut(o.Body, make([]byte, 8))
	var p struct {
		StatusCode int               `json:"statusCode"`
		Headers    map[string]string `json:"headers"`
	}
	if !ok || json.Unmarshal(prelude, &p) != nil || p.StatusCode != 200 || p.Headers["Content-Type"] != "text/event-stream" || p.Headers["Cache-Control"] != "no-cache" {
		t.Fatalf("prelude %q", prelude)
	}
	if !strings.HasPrefix(string(stream), "retry: 1000\n: open\n\n") {
		t.Errorf("the stream begins %q", stream[:min(len(stream), 40)])
	}
	// Each event its own chunk, in order, run.finished last.
	if len(eventChunks) != last+1 || !strings.Contains(eventChunks[last], "event: run.finished\n") {
		t.Errorf("event chunks: %q", eventChunks)
	}
	for i, c := range eventChunks {
		if strings.Count(c, "\n\n") != 1 || !strings.HasSuffix(c, "\n\n") {
			t.Errorf("chunk %d is not one event: %q", i, c)
		}
	}
}
