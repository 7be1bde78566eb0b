package handler_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	lambdatypes "github.com/aws/aws-sdk-go-v2/service/lambda/types"

	"github.com/commonly/runtime/api/apitest"
	"github.com/commonly/runtime/functions/turn/handler"
	"github.com/commonly/runtime/internal/dynamodblocal"
	"github.com/commonly/runtime/shared/engine/durableobject"
	"github.com/commonly/runtime/shared/metrics"
	"github.com/commonly/runtime/shared/money"
	"github.com/commonly/runtime/shared/pricing"
	"github.com/commonly/runtime/shared/runs"
	"github.com/commonly/runtime/shared/store"
	"github.com/commonly/runtime/shared/syncbuf"
	"github.com/commonly/runtime/shared/tools/github"
	"github.com/commonly/runtime/shared/tools/pod"
	"github.com/commonly/runtime/shared/tools/runcode"
	"github.com/commonly/runtime/shared/tools/search"
	"github.com/commonly/runtime/shared/turns"
)

// clock is a settable test clock.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time  { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) Set(t time.Time) { c.mu.Lock(); defer c.mu.Unlock(); c.t = t }

// nativeStub stands in for the native loop in these API tests, which are
// about admission, routing and records; the loop has its own tests. It
// answers or fails as told.
type nativeStub struct {
	mu       sync.Mutex
	calls    int
	fail     bool
	refund   bool
	panics   bool
	unfinish bool
}

func (n *nativeStub) Run(_ context.Context, t turns.EngineTurn) turns.EngineResult {
	n.mu.Lock()
	n.calls++
	n.mu.Unlock()
	if n.panics {
		panic("engine bug")
	}
	if n.unfinish {
		return turns.EngineResult{} // leaves the run running
	}
	now := time.Now().UTC()
	t.Run.CompletedAt = &now
	if n.fail {
		t.Run.Status, t.Run.ErrorKind, t.Run.ErrorMessage = runs.StatusFailed, runs.ErrSandbox, "sandbox lost"
		return turns.EngineResult{Infrastructure: n.refund}
	}
	t.Run.Status, t.Run.FinalMessage = runs.StatusSucceeded, "native answer to: "+t.Run.Message
	t.Run.CostMicros, t.Run.Cost.ModelMicros = 42, 42
	return turns.EngineResult{}
}

type envOpts struct {
	doURL      string
	doTimeout  time.Duration
	dispatcher func(w *turns.Worker) turns.Dispatcher
	storeWrap  func(turns.Store) turns.Store
	limits     string
	// spendCap is DAILY_SPEND_CAP_USD (0: none).
	spendCap money.Micros
	// installCacheTTL turns the container's install cache on (off: 0).
	installCacheTTL time.Duration
	// logHandler writes the function's log (nil: JSON into env.logs).
	logHandler slog.Handler
}

type env struct {
	h  *handler.Handler
	st *store.Dynamo
	// alarm is a store on the same tables whose calls are not recorded:
	// what the tests do as the alarm function (count), which is the
	// alarm's code and recorded by its own tests, not the turn's.
	alarm  *store.Dynamo
	clock  *clock
	native *nativeStub
	logs   *syncbuf.Buffer
	emf    *syncbuf.Buffer
	dbURL  string
}

var testTables = store.Tables{State: "state", Runs: "runs"}

func newEnv(t *testing.T, o envOpts) *env {
	t.Helper()
	ctx := context.Background()
	db, err := dynamodblocal.StartWithTables(ctx, "127.0.0.1:0", testTables)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	st, err := store.New(store.Config{DB: db.Client(func(o *dynamodb.Options) { o.APIOptions = append(o.APIOptions, recorded.APIOption) }), Tables: testTables})
	if err != nil {
		t.Fatal(err)
	}
	alarm, err := store.New(store.Config{DB: db.Client(), Tables: testTables})
	if err != nil {
		t.Fatal(err)
	}
	var ts turns.Store = st
	if o.storeWrap != nil {
		ts = o.storeWrap(st)
	}
	clk := &clock{t: time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)}
	logs := &syncbuf.Buffer{}
	log := slog.New(slog.NewJSONHandler(logs, nil))
	if o.logHandler != nil {
		log = slog.New(o.logHandler)
	}
	native := &nativeStub{}
	engines := map[turns.EngineName]turns.Engine{turns.Native: native}
	prices, err := pricing.Load("")
	if err != nil {
		t.Fatal(err)
	}
	if o.doURL != "" {
		do, err := durableobject.New(durableobject.Config{
			BaseURL: o.doURL, Token: "do-secret-token", Prices: prices, DefaultModel: "deepseek-v4-flash",
			Timeout: o.doTimeout, Now: clk.Now, Log: log,
		})
		if err != nil {
			t.Fatal(err)
		}
		engines[turns.DurableObject] = do
	}
	emf := &syncbuf.Buffer{}
	// One install cache for the service and the worker, as app.Build wires them.
	installs, err := turns.NewInstallCache(turns.InstallCacheConfig{Store: ts, TTL: o.installCacheTTL, Now: clk.Now})
	if err != nil {
		t.Fatal(err)
	}
	emitter, err := metrics.New(metrics.Config{Writer: emf, Now: clk.Now})
	if err != nil {
		t.Fatal(err)
	}
	worker, err := turns.NewWorker(turns.WorkerConfig{Store: ts, Engines: engines, Installs: installs, Metrics: emitter, Now: clk.Now, Log: log})
	if err != nil {
		t.Fatal(err)
	}
	var d turns.Dispatcher = turns.InlineDispatcher{Worker: worker}
	if o.dispatcher != nil {
		d = o.dispatcher(worker)
	}
	limitSpec := o.limits
	if limitSpec == "" {
		limitSpec = turns.DefaultLimits
	}
	limits, err := turns.ParseLimits(limitSpec)
	if err != nil {
		t.Fatal(err)
	}
	svc, err := turns.NewService(turns.ServiceConfig{
		Store: ts, Dispatcher: d, Limits: limits, SpendCap: o.spendCap, DefaultEngine: turns.Native, FallbackConfigured: o.doURL != "",
		Tools: knownTools, Connectors: []string{github.Connector},
		Installs: installs, Metrics: emitter, Now: clk.Now, Log: log,
	})
	if err != nil {
		t.Fatal(err)
	}
	h, err := handler.New(handler.Config{Service: svc, Worker: worker, Log: log})
	if err != nil {
		t.Fatal(err)
	}
	return &env{h: h, st: st, alarm: alarm, clock: clk, native: native, logs: logs, emf: emf, dbURL: db.URL}
}

// knownTools stand for the native engine's catalog (the app wires
// native.Engine.ToolNames): every tool of the runtime.
var knownTools = func() []string {
	names := append(append([]string{runcode.Name, search.Name}, pod.Names...), github.Names...)
	slices.Sort(names)
	return names
}()

// event loads a SAM-style event file from testdata.
func event(t *testing.T, name string) events.APIGatewayV2HTTPRequest {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	var ev events.APIGatewayV2HTTPRequest
	if err := json.Unmarshal(b, &ev); err != nil {
		t.Fatal(err)
	}
	return ev
}

// withPath points an event at other path parameters, as API Gateway would.
func withParam(ev events.APIGatewayV2HTTPRequest, name, value string) events.APIGatewayV2HTTPRequest {
	p := map[string]string{}
	for k, v := range ev.PathParameters {
		p[k] = v
	}
	p[name] = value
	ev.PathParameters = p
	return ev
}

func withBody(ev events.APIGatewayV2HTTPRequest, v any) events.APIGatewayV2HTTPRequest {
	if s, ok := v.(string); ok {
		ev.Body = s
		return ev
	}
	b, _ := json.Marshal(v)
	ev.Body = string(b)
	return ev
}

func withSub(ev events.APIGatewayV2HTTPRequest, sub string) events.APIGatewayV2HTTPRequest {
	c := map[string]string{}
	for k, v := range ev.RequestContext.Authorizer.JWT.Claims {
		c[k] = v
	}
	c["sub"] = sub
	a := *ev.RequestContext.Authorizer
	j := *a.JWT
	j.Claims = c
	a.JWT = &j
	ev.RequestContext.Authorizer = &a
	return ev
}

func withHeader(ev events.APIGatewayV2HTTPRequest, k, v string) events.APIGatewayV2HTTPRequest {
	h := map[string]string{}
	for hk, hv := range ev.Headers {
		h[hk] = hv
	}
	if v == "" {
		delete(h, k)
	} else {
		h[k] = v
	}
	ev.Headers = h
	return ev
}

// do serves one API request, and checks the request and the response
// against the OpenAPI document (api/openapi.yaml).
func (e *env) do(t *testing.T, ev events.APIGatewayV2HTTPRequest) events.APIGatewayV2HTTPResponse {
	t.Helper()
	resp := e.h.HandleHTTP(context.Background(), ev)
	apitest.Check(t, ev, resp)
	return resp
}

// install creates an install through the API.
func (e *env) install(t *testing.T, id, user string, extra map[string]any) {
	t.Helper()
	body := map[string]any{"userId": user, "podId": "pod-1", "agentName": "helper"}
	for k, v := range extra {
		body[k] = v
	}
	resp := e.do(t, withBody(withParam(event(t, "put-install.json"), "installId", id), body))
	if resp.StatusCode != 201 && resp.StatusCode != 200 {
		t.Fatalf("install %s: %d %s", id, resp.StatusCode, resp.Body)
	}
}

func (e *env) turn(t *testing.T, installID, user, msg, key string) events.APIGatewayV2HTTPResponse {
	t.Helper()
	ev := withSub(withBody(withParam(event(t, "submit-turn.json"), "installId", installID), map[string]string{"message": msg}), user)
	return e.do(t, withHeader(ev, "idempotency-key", key))
}

func decode[T any](t *testing.T, body string) T {
	t.Helper()
	var v T
	if err := json.Unmarshal([]byte(body), &v); err != nil {
		t.Fatalf("decode %q: %v", body, err)
	}
	return v
}

// brokenStore fails every call, as an unreachable DynamoDB would.
type brokenStore struct{ turns.Store }

var errBroken = errors.New("dial tcp 10.0.0.1:443: connect: connection refused (internal detail)")

func (brokenStore) GetInstallAndPlan(context.Context, string, string) (*turns.Install, turns.Plan, error) {
	return nil, "", errBroken
}
func (brokenStore) GetInstall(context.Context, string) (*turns.Install, error) {
	return nil, errBroken
}
func (brokenStore) GetPlan(context.Context, string) (turns.Plan, error) { return "", errBroken }
func (brokenStore) Admit(context.Context, turns.Admission) (turns.AdmitResult, error) {
	return turns.AdmitResult{}, errBroken
}
func (brokenStore) Usage(context.Context, string, string) (turns.Usage, error) {
	return turns.Usage{}, errBroken
}
func (brokenStore) GetRun(context.Context, string) (*runs.Run, error) { return nil, errBroken }

func (f *fakeLambda) Invoke(_ context.Context, in *lambda.InvokeInput, _ ...func(*lambda.Options)) (*lambda.InvokeOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.fail {
		return nil, errors.New("lambda: throttled")
	}
	if in.InvocationType != lambdatypes.InvocationTypeEvent || aws.ToString(in.FunctionName) != "turn-fn" {
		return nil, fmt.Errorf("unexpected invoke %+v", in)
	}
	f.payloads = append(f.payloads, in.Payload)
	return &lambda.InvokeOutput{StatusCode: 202}, nil
}

func mustRead(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// asUser replaces the event's claims with a plain user's.
func asUser(t *testing.T, ev events.APIGatewayV2HTTPRequest, sub string) events.APIGatewayV2HTTPRequest {
	ev.RequestContext.Authorizer = event(t, "usage.json").RequestContext.Authorizer
	return withSub(ev, sub)
}
