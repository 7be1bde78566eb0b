package console_test

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/commonly/runtime/infra/awslocal/apigatewaylocal"
	"github.com/commonly/runtime/infra/console"
	"github.com/commonly/runtime/internal/dynamodblocal"
	"github.com/commonly/runtime/shared/money"
	"github.com/commonly/runtime/shared/runs"
	"github.com/commonly/runtime/shared/store"
	"github.com/commonly/runtime/shared/tracing"
	"github.com/commonly/runtime/shared/turns"
	"github.com/commonly/runtime/shared/utcday"
)

var (
	secret = []byte("console-test-secret")
	tables = store.Tables{State: "state", Runs: "runs"}
	now    = time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
)

// rig is the console on the embedded DynamoDB, in front of an API that
// answers "api" to everything.
type rig struct {
	c     *console.Console
	st    *store.Dynamo
	api   int
	flush int
}

func newRig(t *testing.T, cfg console.Config) *rig {
	t.Helper()
	db, err := dynamodblocal.StartWithTables(context.Background(), "127.0.0.1:0", tables)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	st, err := store.New(store.Config{DB: db.Client(), Tables: tables})
	if err != nil {
		t.Fatal(err)
	}
	r := &rig{st: st}
	cfg.API = http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { r.api++; _, _ = w.Write([]byte("api")) })
	cfg.Secret, cfg.DB, cfg.StateTable, cfg.Now = secret, db.Client(), tables.State, func() time.Time { return now }
	cfg.Flush = func(context.Context) error { r.flush++; return nil }
	if r.c, err = console.New(cfg); err != nil {
		t.Fatal(err)
	}
	return r
}

// serve sends one request from remote (host:port) for host.
func (r *rig) serve(method, target, remote, host string, header map[string]string, body string) *httptest.ResponseRecorder {
	req := httptest.NewRequest(method, target, strings.NewReader(body))
	req.RemoteAddr, req.Host = remote, host
	for k, v := range header {
		req.Header.Set(k, v)
	}
	w := httptest.NewRecorder()
	r.c.ServeHTTP(w, req)
	return w
}

const local = "127.0.0.1:54321"

var jsonType = map[string]string{"Content-Type": "application/json"}

func TestNewRefusesAnIncompleteConfig(t *testing.T) {
	_, err := console.New(console.Config{})
	for _, want := range []string{"API", "secret", "state table"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("err = %v, want it to name the %s", err, want)
		}
	}
}

// A token for a user or for the service, minted for a page of this
// origin on loopback, and for nothing else.
func TestTokensAreMintedForLoopbackPagesOnly(t *testing.T) {
	r := newRig(t, console.Config{})
	for _, c := range []struct {
		body, sub, scope string
	}{
		{`{"userId":"demo-user"}`, "demo-user", ""},
		{`{"service":true}`, apigatewaylocal.ServiceSubject, turns.ServiceScope},
	} {
		w := r.serve(http.MethodPost, "/console/api/token", local, "127.0.0.1:8080", map[string]string{"Content-Type": "application/json", "Origin": "http://127.0.0.1:8080"}, c.body)
		var got struct {
			Token     string `json:"token"`
			ExpiresAt string `json:"expiresAt"`
		}
		if w.Code != http.StatusOK || json.Unmarshal(w.Body.Bytes(), &got) != nil {
			t.Fatalf("%s: %d %s", c.body, w.Code, w.Body)
		}
		claims, err := apigatewaylocal.VerifyToken(secret, "Bearer "+got.Token, now)
		if err != nil || claims["sub"] != c.sub || claims["scope"] != c.scope {
			t.Errorf("%s: claims %v, %v", c.body, claims, err)
		}
		if got.ExpiresAt != now.Add(time.Hour).Format(time.RFC3339) {
			t.Errorf("%s: expires at %s", c.body, got.ExpiresAt)
		}
	}
	refused := []struct {
		name, remote, host string
		header             map[string]string
		body               string
		status             int
	}{
		{"from another machine", "10.0.0.7:4000", "127.0.0.1:8080", jsonType, `{"userId":"u"}`, http.StatusForbidden},
		{"for a name rebound to loopback", local, "evil.example:8080", jsonType, `{"userId":"u"}`, http.StatusForbidden},
		{"from another site's page", local, "127.0.0.1:8080", map[string]string{"Content-Type": "application/json", "Origin": "http://evil.example"}, `{"userId":"u"}`, http.StatusForbidden},
		{"as a form post", local, "127.0.0.1:8080", map[string]string{"Content-Type": "application/x-www-form-urlencoded"}, `userId=u`, http.StatusUnsupportedMediaType},
		{"for both", local, "127.0.0.1:8080", jsonType, `{"userId":"u","service":true}`, http.StatusBadRequest},
		{"for nobody", local, "127.0.0.1:8080", jsonType, `{}`, http.StatusBadRequest},
		{"for a bad id", local, "127.0.0.1:8080", jsonType, `{"userId":"a#b"}`, http.StatusBadRequest},
		{"with an unknown field", local, "127.0.0.1:8080", jsonType, `{"userId":"u","scope":"commonly/admin"}`, http.StatusBadRequest},
	}
	for _, c := range refused {
		if w := r.serve(http.MethodPost, "/console/api/token", c.remote, c.host, c.header, c.body); w.Code != c.status || strings.Contains(w.Body.String(), "eyJ") {
			t.Errorf("%s: %d %s, want %d", c.name, w.Code, w.Body, c.status)
		}
	}
	for _, host := range []string{"localhost:8080", "[::1]:8080", "127.0.0.1"} {
		if w := r.serve(http.MethodGet, "/", "[::1]:5000", host, nil, ""); w.Code != http.StatusOK {
			t.Errorf("the page for %s: %d", host, w.Code)
		}
	}
}

// Every path but the console's is the API's, whoever asks.
func TestOtherPathsAreTheAPIs(t *testing.T) {
	r := newRig(t, console.Config{})
	for _, p := range []string{"/v1/me/usage", "/v1/openapi.json", "/docs/extra", "/consoles"} {
		if w := r.serve(http.MethodGet, p, "10.0.0.7:4000", "api.example", nil, ""); w.Code != http.StatusOK || w.Body.String() != "api" {
			t.Errorf("%s: %d %q", p, w.Code, w.Body)
		}
	}
	if r.api != 4 {
		t.Errorf("the API served %d requests", r.api)
	}
}

// The pages load only what this origin serves: the policy allows no
// other source, the one inline script (the import map) by its hash, and
// the pages and their files name no address elsewhere.
func TestPagesFetchNothingFromElsewhere(t *testing.T) {
	r := newRig(t, console.Config{})
	for _, p := range []string{"/", "/docs"} {
		w := r.serve(http.MethodGet, p, local, "127.0.0.1:8080", nil, "")
		if w.Code != http.StatusOK || !strings.HasPrefix(w.Header().Get("Content-Type"), "text/html") {
			t.Fatalf("%s: %d %v", p, w.Code, w.Header())
		}
		csp := w.Header().Get("Content-Security-Policy")
		for _, want := range []string{"default-src 'none'", "connect-src 'self'", "frame-ancestors 'none'"} {
			if !strings.Contains(csp, want) {
				t.Errorf("%s: policy %q lacks %q", p, csp, want)
			}
		}
		m := regexp.MustCompile(`<script type="importmap">([^<]*)</script>`).FindStringSubmatch(w.Body.String())
		if m == nil {
			t.Fatalf("%s: no import map", p)
		}
		sum := sha256.Sum256([]byte(m[1]))
		if !strings.Contains(csp, "'sha256-"+base64.StdEncoding.EncodeToString(sum[:])+"'") {
			t.Errorf("%s: the policy does not allow the import map by its hash", p)
		}
	}
	err := fs.WalkDir(os.DirFS("static"), ".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(filepath.Join("static", path))
		for _, bad := range []string{"http://", "https://", "@import", "//cdn", "fonts.g"} {
			if strings.Contains(string(b), bad) {
				t.Errorf("static/%s names %q", path, bad)
			}
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

// The library serves its files by name from the client's and Swagger
// UI's directories, and nothing else of the disk.
func TestLibraryServesItsFilesOnly(t *testing.T) {
	client, web := t.TempDir(), t.TempDir()
	if err := os.MkdirAll(filepath.Join(client, "dist"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(client, "dist", "client.js"), []byte("export const x = 1;"), 0o644); err != nil {
		t.Fatal(err)
	}
	r := newRig(t, console.Config{ClientDir: client, WebDir: web})
	w := r.serve(http.MethodGet, "/console/lib/client.js", local, "127.0.0.1:8080", nil, "")
	if w.Code != http.StatusOK || w.Body.String() != "export const x = 1;" || !strings.HasPrefix(w.Header().Get("Content-Type"), "text/javascript") {
		t.Errorf("client.js: %d %v %q", w.Code, w.Header(), w.Body)
	}
	if w := r.serve(http.MethodGet, "/console/lib/swagger-ui-bundle.js", local, "127.0.0.1:8080", nil, ""); w.Code != http.StatusNotFound || !strings.Contains(w.Body.String(), "make console-deps") {
		t.Errorf("a file not installed: %d %q", w.Code, w.Body)
	}
	for _, p := range []string{"/console/lib/dist%2Fclient.js", "/console/lib/..%2F..%2Fgo.mod", "/console/lib/smoke.js", "/console/static/../console.go"} {
		if w := r.serve(http.MethodGet, p, local, "127.0.0.1:8080", nil, ""); w.Code == http.StatusOK {
			t.Errorf("%s: served %q", p, w.Body)
		}
	}
}

// The installs with their owners and the users (an install's owner, a
// plan's, today's usage's), from the state table, sorted.
func TestStackListsInstallsAndUsers(t *testing.T) {
	r := newRig(t, console.Config{Alarm: money.Micros(2_000_000), TracesFile: "spans.jsonl"})
	ctx := context.Background()
	for _, in := range []turns.Install{{InstallID: "zeta", UserID: "u-owner"}, {InstallID: "alpha", UserID: "u-owner"}} {
		in.PodID, in.AgentName, in.InstanceID = "p", "a", in.InstallID
		if err := r.st.PutInstall(ctx, &in); err != nil {
			t.Fatal(err)
		}
	}
	if err := r.st.SetPlan(ctx, "u-pro", turns.PlanPro, now); err != nil {
		t.Fatal(err)
	}
	for user, at := range map[string]time.Time{"u-today": now, "u-yesterday": now.Add(-24 * time.Hour)} {
		run := &runs.Run{RunID: "run-" + user, InstallID: "alpha", UserID: user, Status: runs.StatusQueued, Day: utcday.Of(at), CreatedAt: at, Message: "hi"}
		if res, err := r.st.Admit(ctx, turns.Admission{Plan: turns.PlanFree, Run: run, Limit: 30, Now: at}); err != nil || !res.Admitted {
			t.Fatalf("admit: %+v %v", res, err)
		}
	}
	w := r.serve(http.MethodGet, "/console/api/stack", local, "127.0.0.1:8080", nil, "")
	var got struct {
		Installs []struct{ InstallID, UserID string }
		Users    []string
		Alarm    int64 `json:"alarmMicros"`
		Traces   bool
	}
	if w.Code != http.StatusOK || json.Unmarshal(w.Body.Bytes(), &got) != nil {
		t.Fatalf("%d %s", w.Code, w.Body)
	}
	if len(got.Installs) != 2 || got.Installs[0].InstallID != "alpha" || got.Installs[1].InstallID != "zeta" || got.Installs[0].UserID != "u-owner" {
		t.Errorf("installs %+v", got.Installs)
	}
	if want := []string{"u-owner", "u-pro", "u-today"}; !slices.Equal(got.Users, want) {
		t.Errorf("users %v, want %v (a day's usage other than today's names no one)", got.Users, want)
	}
	if got.Alarm != 2_000_000 || !got.Traces {
		t.Errorf("alarm %d, traces %v", got.Alarm, got.Traces)
	}
}

// A trace's spans, read from a span file the tracer provider wrote,
// after the stack's spans are flushed; a bad id is refused.
func TestTraceIsReadFromTheSpanFile(t *testing.T) {
	ctx := context.Background()
	file := filepath.Join(t.TempDir(), "spans.jsonl")
	p, err := tracing.Setup(ctx, tracing.Config{ServiceName: "test", File: file, SampleRatio: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Shutdown(ctx) })
	rctx, root := tracing.Start(ctx, "turn.run")
	_, chat := tracing.StartChat(rctx, "offline-demo", 0)
	tracing.EndChat(chat, &runs.Step{Model: "offline-demo", PromptTokens: 700, CompletionTokens: 40, CostMicros: 37}, "")
	root.End()
	_, other := tracing.Start(ctx, "elsewhere")
	other.End()
	traceID := root.SpanContext().TraceID().String()
	if err := p.Flush(ctx); err != nil {
		t.Fatal(err)
	}

	r := newRig(t, console.Config{TracesFile: file})
	w := r.serve(http.MethodGet, "/console/api/traces/"+traceID, local, "127.0.0.1:8080", nil, "")
	var got struct{ Spans []console.Span }
	if w.Code != http.StatusOK || json.Unmarshal(w.Body.Bytes(), &got) != nil {
		t.Fatalf("%d %s", w.Code, w.Body)
	}
	if r.flush != 1 {
		t.Errorf("the spans were flushed %d times before the read", r.flush)
	}
	if len(got.Spans) != 2 || got.Spans[0].Name != "turn.run" || got.Spans[1].Name != "chat offline-demo" ||
		got.Spans[1].ParentID != got.Spans[0].SpanID || got.Spans[0].ParentID != "" {
		t.Fatalf("spans %+v", got.Spans)
	}
	chatSpan := got.Spans[1]
	if chatSpan.Attributes["gen_ai.usage.input_tokens"] != 700.0 || chatSpan.Attributes["commonly.cost_micros"] != 37.0 ||
		chatSpan.Attributes["gen_ai.request.model"] != "offline-demo" || chatSpan.DurationMs < 0 || chatSpan.End.Before(chatSpan.Start) {
		t.Errorf("the chat span %+v", chatSpan)
	}
	if w := r.serve(http.MethodGet, "/console/api/traces/nothex", local, "127.0.0.1:8080", nil, ""); w.Code != http.StatusBadRequest {
		t.Errorf("a bad trace id: %d", w.Code)
	}
	none := newRig(t, console.Config{})
	if w := none.serve(http.MethodGet, "/console/api/traces/"+traceID, local, "127.0.0.1:8080", nil, ""); w.Code != http.StatusOK || !strings.Contains(w.Body.String(), `"spans":[]`) {
		t.Errorf("without a span file: %d %s", w.Code, w.Body)
	}
}
