package handler_test

import (
	"context"
	"flag"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/commonly/runtime/api"
	"github.com/commonly/runtime/api/apitest"
	"github.com/commonly/runtime/functions/turn/handler"
	"github.com/commonly/runtime/internal/awscalls"
	"github.com/commonly/runtime/shared/runs"
	"github.com/commonly/runtime/shared/turns"
)

// TestMain requires, after a full run of this package's tests, that every
// response the OpenAPI document promises was produced by some test (each
// operation's statuses and each problem type): a documented response the
// code never gives is drift too. Every exchange was already validated by
// env.do.
var update = flag.Bool("update", false, "rewrite ../testdata/aws-calls/handler.json from the AWS calls the tests made")

// recorded is every AWS call made through the tests' store (awscalls).
var recorded awscalls.Recorder

func TestMain(m *testing.M) {
	flag.Parse()
	code := m.Run()
	if code == 0 && flag.Lookup("test.run").Value.String() == "" && flag.Lookup("test.skip").Value.String() == "" {
		v, err := apitest.Shared()
		if err != nil {
			fmt.Fprintln(os.Stderr, "FAIL:", err)
			os.Exit(1)
		}
		if missing := v.Missing(); len(missing) > 0 {
			fmt.Fprintf(os.Stderr, "FAIL: api/openapi.yaml documents responses no handler test produced (add a test, or drop them from the document):\n  %s\n", strings.Join(missing, "\n  "))
			code = 1
		}
	}
	// The AWS calls the tests' store made, kept in
	// ../testdata/aws-calls/handler.json (-update rewrites it) for
	// infra/cdk/stack's TestRolesAllowRecordedCalls.
	if code == 0 {
		if err := awscalls.Keep("../testdata/aws-calls/handler.json", &recorded,
			map[string]string{"STATE_TABLE": testTables.State, "RUNS_TABLE": testTables.Runs}, *update); err != nil {
			fmt.Fprintln(os.Stderr, "FAIL: AWS calls:", err)
			code = 1
		}
	}
	os.Exit(code)
}

// TestRoutesMatchTheDocument: the handler's route table and the
// document's operations are the same set, with the same security.
func TestRoutesMatchTheDocument(t *testing.T) {
	doc := apitest.Default(t).Document()
	documented := map[string]bool{}
	for _, path := range doc.Paths.InMatchingOrder() {
		for method, op := range doc.Paths.Value(path).Operations() {
			if apitest.OtherFunction(op) {
				continue
			}
			key := method + " " + path
			documented[key] = true
			if !slices.Contains(handler.Routes, key) {
				t.Errorf("%s (%s) is in api/openapi.yaml but not in the handler's route table", key, op.OperationID)
				continue
			}
			security := doc.Security
			if op.Security != nil {
				security = *op.Security
			}
			var scopes []string
			for _, req := range security {
				for _, s := range req {
					scopes = append(scopes, s...)
				}
			}
			switch {
			case slices.Contains(handler.PublicRoutes, key):
				if len(security) != 0 {
					t.Errorf("%s is public in the handler but the document requires %v", key, security)
				}
			case slices.Contains(handler.ServiceRoutes, key):
				if len(security) != 1 || !slices.Equal(scopes, []string{handler.ServiceScope}) {
					t.Errorf("%s is a service route but the document's security is %v, want bearerAuth with %s", key, security, handler.ServiceScope)
				}
			default:
				if len(security) != 1 || len(scopes) != 0 {
					t.Errorf("%s needs an identity and no scope, but the document's security is %v", key, security)
				}
			}
		}
	}
	for _, key := range handler.Routes {
		if !documented[key] {
			t.Errorf("%s is in the handler's route table but not in api/openapi.yaml", key)
		}
	}
}

// routeEvents are the SAM-style event files of the routes, one per route.
var routeEvents = map[string]string{
	"PUT /v1/installs/{installId}":            "put-install.json",
	"GET /v1/installs/{installId}":            "get-install.json",
	"POST /v1/installs/{installId}/migration": "migration.json",
	"PUT /v1/users/{userId}/plan":             "set-plan.json",
	"POST /v1/installs/{installId}/turns":     "submit-turn.json",
	"GET /v1/runs/{runId}":                    "get-run.json",
	"POST /v1/runs/{runId}/cancel":            "cancel-run.json",
	"GET /v1/me/usage":                        "usage.json",
	"GET /v1/users/{userId}/usage":            "user-usage.json",
	"GET /v1/me/runs":                         "my-runs.json",
	"GET /v1/users/{userId}/runs":             "user-runs.json",
	"GET /v1/openapi.json":                    "get-openapi.json",
}

func TestEveryRouteHasAnEventFile(t *testing.T) {
	for _, key := range handler.Routes {
		name, ok := routeEvents[key]
		if !ok {
			t.Errorf("%s has no event file in functions/turn/testdata", key)
			continue
		}
		if ev := event(t, name); ev.RouteKey != key {
			t.Errorf("%s: route key %q, want %q", name, ev.RouteKey, key)
		}
	}
}

// TestOnlyThePublicRouteAnswersWithoutIdentity: without the authorizer's
// claims every route answers 401, except the public ones.
func TestOnlyThePublicRouteAnswersWithoutIdentity(t *testing.T) {
	e := newEnv(t, envOpts{})
	for _, key := range handler.Routes {
		ev := event(t, routeEvents[key])
		ev.RequestContext.Authorizer = nil
		resp := e.do(t, ev)
		if slices.Contains(handler.PublicRoutes, key) {
			if resp.StatusCode != 200 {
				t.Errorf("%s without identity: %d %s", key, resp.StatusCode, resp.Body)
			}
			continue
		}
		checkProblem(t, resp, 401, "unauthenticated")
	}
}

// TestOpenAPIDocumentIsServed: GET /v1/openapi.json answers the embedded
// document, to anyone.
func TestOpenAPIDocumentIsServed(t *testing.T) {
	e := newEnv(t, envOpts{})
	for _, ev := range []events.APIGatewayV2HTTPRequest{event(t, "get-openapi.json"), asUser(t, event(t, "get-openapi.json"), "user-1")} {
		resp := e.do(t, ev)
		if resp.StatusCode != 200 || resp.Headers["Content-Type"] != "application/json" || resp.Body != api.JSON {
			t.Fatalf("openapi.json: %d %v (%d bytes)", resp.StatusCode, resp.Headers, len(resp.Body))
		}
		if doc := decode[map[string]any](t, resp.Body); doc["openapi"] != "3.1.0" {
			t.Errorf("openapi = %v", doc["openapi"])
		}
	}
}

// panickingStore panics on every call, as a bug below the handler would.
type panickingStore struct{ turns.Store }

func (panickingStore) GetInstall(context.Context, string) (*turns.Install, error) {
	panic("store bug: secret internal state")
}
func (panickingStore) GetInstallAndPlan(context.Context, string, string) (*turns.Install, turns.Plan, error) {
	panic("store bug: secret internal state")
}
func (panickingStore) SetPlan(context.Context, string, turns.Plan, time.Time) error {
	panic("store bug: secret internal state")
}
func (panickingStore) GetRun(context.Context, string) (*runs.Run, error) {
	panic("store bug: secret internal state")
}
func (panickingStore) Usage(context.Context, string, string) (turns.Usage, error) {
	panic("store bug: secret internal state")
}

// TestAPanicAnswers500: a panic under any route is a 500 internal
// problem that shows nothing of the panic.
func TestAPanicAnswers500(t *testing.T) {
	e := newEnv(t, envOpts{storeWrap: func(s turns.Store) turns.Store { return panickingStore{s} }})
	for _, key := range handler.Routes {
		if slices.Contains(handler.PublicRoutes, key) {
			continue
		}
		resp := e.do(t, event(t, routeEvents[key]))
		checkProblem(t, resp, 500, "internal")
		if strings.Contains(resp.Body, "secret") {
			t.Errorf("%s: the panic reached the client: %s", key, resp.Body)
		}
	}
	if !strings.Contains(e.logs.String(), "handler panicked") {
		t.Error("a panic must be logged")
	}
}

// downStore fails every write and read as an unreachable DynamoDB would.
type downStore struct{ brokenStore }

func (downStore) SetPlan(context.Context, string, turns.Plan, time.Time) error { return errBroken }

// TestServiceRoutesFailClosed: with the store down the service routes
// answer 503 with Retry-After, and nothing internal.
func TestServiceRoutesFailClosed(t *testing.T) {
	e := newEnv(t, envOpts{storeWrap: func(s turns.Store) turns.Store { return downStore{brokenStore{s}} }})
	for _, key := range handler.ServiceRoutes {
		resp := e.do(t, event(t, routeEvents[key]))
		checkProblem(t, resp, 503, "unavailable")
		if resp.Headers["Retry-After"] != "5" || strings.Contains(resp.Body, "10.0.0.1") {
			t.Errorf("%s: %v %s", key, resp.Headers, resp.Body)
		}
	}
}

// TestPutInstallUpdates: a second PUT updates the install (200), keeps
// what it leaves out and its creation time.
func TestPutInstallUpdates(t *testing.T) {
	e := newEnv(t, envOpts{})
	e.install(t, "inst-1", "user-1", map[string]any{"tools": []string{"commonly_run_code"}, "systemPrompt": "Be brief."})
	created := e.clock.Now()
	e.clock.Set(created.Add(time.Hour))
	resp := e.do(t, withBody(event(t, "put-install.json"), map[string]any{"userId": "user-1", "podId": "pod-2", "agentName": "helper", "engine": "durable-object"}))
	in := decode[map[string]any](t, resp.Body)
	if resp.StatusCode != 200 || in["podId"] != "pod-2" || in["engine"] != "durable-object" || in["systemPrompt"] != "Be brief." ||
		in["createdAt"] != created.Format(time.RFC3339) || in["updatedAt"] != created.Add(time.Hour).Format(time.RFC3339) {
		t.Fatalf("update: %d %v", resp.StatusCode, in)
	}
}
