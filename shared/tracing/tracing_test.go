package tracing_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/commonly/runtime/shared/runs"
	"github.com/commonly/runtime/shared/tracing"
)

func setup(t *testing.T, cfg tracing.Config) (*tracing.Provider, *tracetest.InMemoryExporter) {
	t.Helper()
	exp := tracetest.NewInMemoryExporter()
	cfg.Exporter = exp
	tp, err := tracing.Setup(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	return tp, exp
}

func flushed(t *testing.T, tp *tracing.Provider, exp *tracetest.InMemoryExporter) tracetest.SpanStubs {
	t.Helper()
	if err := tp.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	return exp.GetSpans()
}

// The tail decision: at a share of 0 a trace whose spans all succeeded is
// dropped whole; one with a failed span anywhere is kept whole, children
// ended before the root included; a span ending after its trace was
// decided follows the decision.
func TestTailSamplingKeepsFailedTraces(t *testing.T) {
	tp, exp := setup(t, tracing.Config{SampleRatio: 0})
	ctx := context.Background()

	okCtx, okRoot := tracing.Start(ctx, "ok-root")
	_, okChild := tracing.Start(okCtx, "ok-child")
	okChild.End()
	okRoot.End()

	badCtx, badRoot := tracing.Start(ctx, "bad-root")
	_, badChild := tracing.Start(badCtx, "bad-child")
	tracing.Fail(badChild, "model_error")
	badChild.End()
	_, late := tracing.Start(badCtx, "late")
	badRoot.End()
	late.End()

	var names []string
	for _, s := range flushed(t, tp, exp) {
		names = append(names, s.Name)
		if s.Name == "bad-child" && (s.Status.Code != codes.Error || s.Status.Description != "model_error") {
			t.Errorf("bad-child status = %+v", s.Status)
		}
	}
	if strings.Join(names, ",") != "bad-child,bad-root,late" {
		t.Errorf("exported %v, want the failed trace whole and nothing of the other", names)
	}
}

// At a share of 1 every trace is kept.
func TestTailSamplingShareOne(t *testing.T) {
	tp, exp := setup(t, tracing.Config{SampleRatio: 1})
	_, s := tracing.Start(context.Background(), "root")
	s.End()
	if got := flushed(t, tp, exp); len(got) != 1 {
		t.Errorf("%d spans exported, want 1", len(got))
	}
}

// Every exported string is scrubbed of the secrets, and a URL's query is
// cut unless content is captured.
func TestExportedSpansAreScrubbed(t *testing.T) {
	const secret = "sk-tracing-secret-123456"
	tp, exp := setup(t, tracing.Config{SampleRatio: 1})
	tp.ScrubSecrets(secret)
	ctx, s := tracing.Start(context.Background(), "call", trace.WithAttributes(
		attribute.String("upstream.message", "bad key "+secret),
		attribute.StringSlice("list", []string{"x", secret}),
		attribute.String("url.full", "https://api.github.com/search/code?q=my+secret+plan&per_page=5"),
	))
	s.AddEvent("e", trace.WithAttributes(attribute.String("detail", secret)))
	tracing.RecordContent(ctx, tracing.InputMessages, "not captured")
	s.End()
	b, _ := json.Marshal(flushed(t, tp, exp))
	out := string(b)
	if strings.Contains(out, secret) || strings.Contains(out, "my+secret+plan") || strings.Contains(out, "not captured") {
		t.Errorf("exported: %s", out)
	}
	if !strings.Contains(out, "https://api.github.com/search/code") {
		t.Errorf("the URL without its query should stay: %s", out)
	}
}

// The dispatch carrier: what Inject writes, Extract reads back as the
// remote parent of the next span.
func TestCarrierCrossesTheDispatch(t *testing.T) {
	tp, exp := setup(t, tracing.Config{SampleRatio: 1})
	ctx, admit := tracing.Start(context.Background(), "request")
	fields := tracing.Inject(ctx)
	admit.End()
	if !strings.Contains(fields["traceparent"], tracing.TraceID(ctx)) {
		t.Fatalf("carrier = %v", fields)
	}
	wctx := tracing.Extract(context.Background(), fields)
	_, worker := tracing.Start(wctx, "worker")
	worker.End()
	spans := flushed(t, tp, exp)
	if len(spans) != 2 || spans[1].Parent.SpanID() != spans[0].SpanContext.SpanID() || !spans[1].Parent.IsRemote() {
		t.Errorf("worker's parent = %v, want the request %v (remote)", spans[1].Parent, spans[0].SpanContext)
	}
}

// A run's root gets its outcome, and a run that failed fails the span.
func TestRunEnded(t *testing.T) {
	tp, exp := setup(t, tracing.Config{SampleRatio: 1})
	_, s := tracing.Start(context.Background(), "turn.run")
	r := &runs.Run{RunID: "run_1", InstallID: "inst", UserID: "u", Engine: "native", Status: runs.StatusFailed, ErrorKind: runs.ErrLLM,
		Tokens: runs.Tokens{Prompt: 10, CachedPrompt: 4, Completion: 3, Total: 13}, CostMicros: 42}
	tracing.RunEnded(s, r)
	s.End()
	got := flushed(t, tp, exp)[0]
	want := map[attribute.Key]any{tracing.RunID: "run_1", tracing.RunStatus: "failed", tracing.ErrorKind: "llm_error",
		tracing.TotalTokens: int64(13), tracing.CostMicros: int64(42), "gen_ai.usage.cache_read.input_tokens": int64(4)}
	for _, kv := range got.Attributes {
		if w, ok := want[kv.Key]; ok && kv.Value.AsInterface() != w {
			t.Errorf("%s = %v, want %v", kv.Key, kv.Value.AsInterface(), w)
		}
		delete(want, kv.Key)
	}
	if len(want) > 0 || got.Status.Code != codes.Error {
		t.Errorf("missing %v; status %v", want, got.Status)
	}
}

// Log lines logged with a span's context carry its trace and span ids.
func TestLogHandlerAddsTheTraceID(t *testing.T) {
	setup(t, tracing.Config{SampleRatio: 1})
	var buf bytes.Buffer
	log := slog.New(tracing.LogHandler(slog.NewJSONHandler(&buf, nil)))
	ctx, s := tracing.Start(context.Background(), "x")
	defer s.End()
	log.InfoContext(ctx, "with")
	log.Info("without")
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if !strings.Contains(lines[0], `"traceId":"`+tracing.TraceID(ctx)+`"`) || strings.Contains(lines[1], "traceId") {
		t.Errorf("lines = %v", lines)
	}
}

// ConfigFromEnv: off by default, each exporter by its variable, every
// problem reported.
func TestConfigFromEnv(t *testing.T) {
	env := func(kv ...string) func(string) string {
		m := map[string]string{}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return func(k string) string { return m[k] }
	}
	if c, err := tracing.ConfigFromEnv(env(), "svc", nil); err != nil || c.Enabled() {
		t.Errorf("empty env: %+v %v", c, err)
	}
	if c, err := tracing.ConfigFromEnv(env("TRACES_FILE", "/tmp/x", "TRACES_SAMPLE_RATIO", "0.25"), "svc", nil); err != nil || c.File != "/tmp/x" || c.SampleRatio != 0.25 {
		t.Errorf("file: %+v %v", c, err)
	}
	if c, err := tracing.ConfigFromEnv(env("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:4318"), "svc", nil); err != nil || c.OTLP == nil || c.OTLP.Endpoint != "http://127.0.0.1:4318/v1/traces" {
		t.Errorf("otlp: %+v %v", c, err)
	}
	if c, err := tracing.ConfigFromEnv(env("TRACES_FILE", "/tmp/x", "OTEL_SDK_DISABLED", "true"), "svc", nil); err != nil || c.Enabled() {
		t.Errorf("disabled: %+v %v", c, err)
	}
	_, err := tracing.ConfigFromEnv(env("TRACES_XRAY", "true", "TRACES_SAMPLE_RATIO", "2", "OTEL_EXPORTER_OTLP_PROTOCOL", "grpc", "OTEL_TRACES_EXPORTER", "otlp"), "svc", nil)
	for _, want := range []string{"TRACES_XRAY", "TRACES_SAMPLE_RATIO", "grpc"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v should name %s", err, want)
		}
	}
}

// An X-Ray endpoint that does not answer holds an invocation at most
// FlushTimeout (plus scheduling), never the exporter's default minute of
// retries.
func TestFlushIsBounded(t *testing.T) {
	hang := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { <-hang }))
	t.Cleanup(func() { close(hang); srv.Close() })
	creds := aws.NewCredentialsCache(credentials.NewStaticCredentialsProvider("AKID", "SECRET", ""))
	tp, err := tracing.Setup(context.Background(), tracing.Config{SampleRatio: 1, XRay: &tracing.XRay{Region: "us-east-1", Credentials: creds, Endpoint: srv.URL}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	h := tracing.WithFlush(tp, slog.New(slog.DiscardHandler), func(ctx context.Context, _ string) (string, error) {
		_, s := tracing.Start(ctx, "invocation")
		s.End()
		return "ok", nil
	})
	start := time.Now()
	if out, err := h(context.Background(), "ev"); err != nil || out != "ok" {
		t.Fatalf("handler: %q %v", out, err)
	}
	if d := time.Since(start); d > tracing.FlushTimeout+time.Second {
		t.Errorf("the invocation was held %s by an unreachable endpoint", d)
	}
}

// xrayExport exports one span to an X-Ray stand-in that answers status,
// signed with creds in eu-west-1; it returns the request the stand-in
// got and the flush's error.
func xrayExport(t *testing.T, creds aws.CredentialsProvider, status int) (*http.Request, error) {
	t.Helper()
	got := make(chan *http.Request, 4)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got <- r.Clone(context.Background())
		w.Header().Set("Content-Type", "application/x-protobuf")
		w.WriteHeader(status)
	}))
	t.Cleanup(srv.Close)
	tp, err := tracing.Setup(context.Background(), tracing.Config{SampleRatio: 1, XRay: &tracing.XRay{Region: "eu-west-1", Credentials: creds, Endpoint: srv.URL}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	_, s := tracing.Start(context.Background(), "x")
	s.End()
	err = tp.Flush(context.Background())
	return <-got, err
}

// Exports to X-Ray are OTLP protobuf, signed with SigV4 for the xray
// service in the configured region.
func TestXRayExportIsSigned(t *testing.T) {
	r, err := xrayExport(t, aws.NewCredentialsCache(credentials.NewStaticCredentialsProvider("AKIDTRACES", "SECRET", "")), http.StatusOK)
	if err != nil {
		t.Fatal(err)
	}
	auth := r.Header.Get("Authorization")
	if r.URL.Path != "/v1/traces" || r.Header.Get("Content-Type") != "application/x-protobuf" ||
		!strings.HasPrefix(auth, "AWS4-HMAC-SHA256 Credential=AKIDTRACES/") || !strings.Contains(auth, "/eu-west-1/xray/aws4_request") ||
		r.Header.Get("X-Amz-Content-Sha256") == "" && r.Header.Get("X-Amz-Date") == "" {
		t.Errorf("export %s %s, headers %v", r.Method, r.URL.Path, r.Header)
	}
}

// The exporter reads OTEL_EXPORTER_OTLP_* itself; a collector's headers
// set there never reach X-Ray, and a refused export's error carries
// neither the secret key nor the request's signature.
func TestXRayExportGetsNoCollectorHeaders(t *testing.T) {
	t.Setenv("OTEL_EXPORTER_OTLP_HEADERS", "api-key=collector-key-51f")
	t.Setenv("OTEL_EXPORTER_OTLP_COMPRESSION", "gzip")
	creds := aws.NewCredentialsCache(credentials.NewStaticCredentialsProvider("AKIDTRACES", "SECRETKEY42", "SESSIONTOKEN42"))
	r, err := xrayExport(t, creds, http.StatusForbidden)
	if r.Header.Get("Api-Key") != "" || r.Header.Get("Content-Encoding") != "" {
		t.Errorf("X-Ray got the collector's settings: %v", r.Header)
	}
	if err == nil || !strings.Contains(err.Error(), "403") {
		t.Fatalf("a refused export: %v", err)
	}
	sig := r.Header.Get("Authorization")
	for _, secret := range []string{"SECRETKEY42", "SESSIONTOKEN42", sig[strings.LastIndex(sig, "=")+1:]} {
		if strings.Contains(err.Error(), secret) {
			t.Errorf("the export's error %q shows %q", err, secret)
		}
	}
}

// Scrubbing copies a span's attributes only when it changes one: the
// clean ones before and after a changed or dropped one keep their order
// and values.
func TestScrubKeepsCleanAttributesInOrder(t *testing.T) {
	const secret = "sk-tracing-secret-123456"
	tp, exp := setup(t, tracing.Config{SampleRatio: 1})
	tp.ScrubSecrets(secret)
	_, s := tracing.Start(context.Background(), "call", trace.WithAttributes(
		tracing.RunID.String("run-1"),
		attribute.String("url.query", "q=plan"),
		attribute.Int("n", 7),
		attribute.String("upstream.message", "bad key "+secret),
		attribute.String("clean", "ok"),
	))
	s.End()
	spans := flushed(t, tp, exp)
	if len(spans) != 1 {
		t.Fatalf("%d spans", len(spans))
	}
	var got []string
	for _, kv := range spans[0].Attributes {
		got = append(got, string(kv.Key)+"="+kv.Value.String())
	}
	want := []string{"commonly.run.id=run-1", "n=7", "upstream.message=bad key [redacted]", "clean=ok"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("attributes %q, want %q", got, want)
	}
}

// With two exporters (a file and a collector), each gets every kept span
// once, decided and scrubbed once.
func TestEveryExporterGetsTheKeptSpans(t *testing.T) {
	file := filepath.Join(t.TempDir(), "spans.jsonl")
	tp, exp := setup(t, tracing.Config{SampleRatio: 1, File: file})
	_, s := tracing.Start(context.Background(), "one")
	s.End()
	if got := flushed(t, tp, exp); len(got) != 1 || got[0].Name != "one" {
		t.Fatalf("the collector got %v", got)
	}
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(b), `"Name":"one"`); n != 1 {
		t.Errorf("the file holds the span %d times:\n%s", n, b)
	}
}

// Issue 35: where nothing flushes (the local stack's TRACES_FILE), a
// turn's spans reach the file within ExportDelay of its end, not once 512
// spans have gathered.
func TestSpansReachTheFileWithinTheExportDelay(t *testing.T) {
	file := filepath.Join(t.TempDir(), "spans.jsonl")
	tp, err := tracing.Setup(context.Background(), tracing.Config{SampleRatio: 1, File: file, ExportDelay: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	ctx, root := tracing.Start(context.Background(), "turn")
	_, child := tracing.Start(ctx, "model")
	child.End()
	root.End()
	ended := time.Now()
	for {
		b, _ := os.ReadFile(file)
		if strings.Contains(string(b), `"Name":"turn"`) && strings.Contains(string(b), `"Name":"model"`) {
			break
		}
		if time.Since(ended) > time.Second {
			t.Fatalf("no spans in the file a second after the turn ended:\n%s", b)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
