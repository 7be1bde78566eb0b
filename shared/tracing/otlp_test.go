package tracing

import (
	"compress/gzip"
	"context"
	"errors"
	"io"
	"io/fs"
	"math"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/instrumentation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/testing/protocmp"

	"github.com/google/go-cmp/cmp"
)

// oracleSpans are spans with everything the OTLP encoding has to carry:
// every attribute type (nested slices and maps, empty values, strings
// long enough for multi-byte lengths), events, links, every kind and
// status, remote and local parents, trace state, dropped counts, two
// resources and three scopes.
func oracleSpans(t testing.TB) []sdktrace.ReadOnlySpan {
	t.Helper()
	resA := resource.NewWithAttributes("https://opentelemetry.io/schemas/1.26.0",
		attribute.String("service.name", "commonly-turn"), attribute.String("faas.name", "turn"))
	resB := resource.NewSchemaless(attribute.String("service.name", "commonly-alarm"))
	scopes := []instrumentation.Scope{
		{Name: ScopeName},
		{Name: "otelhttp", Version: "0.72.0", SchemaURL: "https://opentelemetry.io/schemas/1.40.0"},
		{Name: "scoped", Attributes: attribute.NewSet(attribute.Bool("x", true))},
	}
	ts, err := trace.ParseTraceState("vendor=abc,other=1")
	if err != nil {
		t.Fatal(err)
	}
	tid := trace.TraceID{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}
	sc := func(span byte, remote bool) trace.SpanContext {
		return trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: trace.SpanID{span, 1}, TraceFlags: trace.FlagsSampled, Remote: remote})
	}
	long := strings.Repeat("long value ", 1700) // ~18 KB: a 3-byte length
	attrs := []attribute.KeyValue{
		attribute.String("s", "v"), attribute.String("empty", ""), attribute.String("long", long),
		attribute.Bool("t", true), attribute.Bool("f", false),
		attribute.Int64("zero", 0), attribute.Int64("neg", -42), attribute.Int64("big", math.MaxInt64),
		attribute.Float64("half", -0.5), attribute.Float64("inf", math.Inf(1)), attribute.Float64("fzero", 0),
		attribute.BoolSlice("bs", []bool{true, false}), attribute.Int64Slice("is", []int64{0, -1, 300}),
		attribute.Float64Slice("fs", []float64{1.5, 0}), attribute.StringSlice("ss", []string{"a", "", long}),
		attribute.ByteSlice("bytes", []byte{0, 1, 2}), attribute.ByteSlice("nobytes", nil),
		attribute.Slice("mixed", attribute.StringValue("a"), attribute.Int64Value(1), attribute.SliceValue(attribute.BoolValue(true))),
		attribute.Map("map", attribute.String("k", "v"), attribute.Map("inner", attribute.Int("n", 2))),
		{Key: "nothing", Value: attribute.Value{}},
	}
	start := time.Date(2026, 12, 4, 17, 0, 0, 123456789, time.UTC)
	stubs := tracetest.SpanStubs{
		{
			Name: "turn", SpanContext: sc(1, false).WithTraceState(ts), SpanKind: trace.SpanKindServer,
			StartTime: start, EndTime: start.Add(40 * time.Second),
			Attributes: attrs, Status: sdktrace.Status{Code: codes.Error, Description: "model failed"},
			Events: []sdktrace.Event{
				{Name: "exception", Time: start.Add(time.Second), Attributes: []attribute.KeyValue{attribute.String("exception.type", "x")}, DroppedAttributeCount: 2},
				{Name: "bare"},
			},
			Links: []sdktrace.Link{
				{SpanContext: sc(9, true), Attributes: []attribute.KeyValue{attribute.String("run.id", "r1")}, DroppedAttributeCount: 1},
				{SpanContext: sc(8, false)},
			},
			DroppedAttributes: 3, DroppedEvents: 4, DroppedLinks: 5,
			Resource: resA, InstrumentationScope: scopes[0],
		},
		{Name: "chat", SpanContext: sc(2, false), Parent: sc(1, false), SpanKind: trace.SpanKindClient, StartTime: start, EndTime: start.Add(time.Second),
			Status: sdktrace.Status{Code: codes.Ok}, Resource: resA, InstrumentationScope: scopes[1]},
		{Name: "worker", SpanContext: sc(3, false), Parent: sc(7, true), SpanKind: trace.SpanKindConsumer, StartTime: start, EndTime: start,
			Resource: resA, InstrumentationScope: scopes[0]},
		{Name: "emit", SpanContext: sc(4, false), SpanKind: trace.SpanKindProducer, Resource: resA, InstrumentationScope: scopes[2]},
		{Name: "internal", SpanContext: sc(5, false), SpanKind: trace.SpanKindInternal, Resource: resB, InstrumentationScope: scopes[0]},
		{Name: "unspecified", SpanContext: sc(6, false), Resource: resB, InstrumentationScope: scopes[1],
			StartTime: time.Unix(0, 0).Add(-time.Hour)}, // before the epoch: written as 0
	}
	return stubs.Snapshots()
}

// capture serves OTLP/HTTP and keeps each request's body.
type capture struct {
	mu     sync.Mutex
	bodies [][]byte
	header http.Header
}

func (c *capture) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var body io.Reader = r.Body
	if r.Header.Get("Content-Encoding") == "gzip" {
		zr, err := gzip.NewReader(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		body = zr
	}
	b, err := io.ReadAll(body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	c.mu.Lock()
	c.bodies = append(c.bodies, b)
	c.header = r.Header.Clone()
	c.mu.Unlock()
	w.Header().Set("Content-Type", "application/x-protobuf")
}

func (c *capture) request(t *testing.T) *coltracepb.ExportTraceServiceRequest {
	t.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.bodies) != 1 {
		t.Fatalf("%d exports, want 1", len(c.bodies))
	}
	var req coltracepb.ExportTraceServiceRequest
	if err := proto.Unmarshal(c.bodies[0], &req); err != nil {
		t.Fatalf("the export is not an ExportTraceServiceRequest: %v", err)
	}
	return &req
}

// normalize orders a request's resources and scopes by name: the SDK
// exporter groups them through maps, in no fixed order.
func normalize(req *coltracepb.ExportTraceServiceRequest) {
	name := func(rs *tracepb.ResourceSpans) string {
		for _, kv := range rs.GetResource().GetAttributes() {
			if kv.Key == "service.name" {
				return kv.GetValue().GetStringValue()
			}
		}
		return ""
	}
	slices.SortFunc(req.ResourceSpans, func(a, b *tracepb.ResourceSpans) int { return strings.Compare(name(a), name(b)) })
	for _, rs := range req.ResourceSpans {
		slices.SortFunc(rs.ScopeSpans, func(a, b *tracepb.ScopeSpans) int {
			return strings.Compare(a.GetScope().GetName(), b.GetScope().GetName())
		})
	}
}

// The maintained exporter (otlptracehttp, test-only here) is the oracle:
// the same spans, exported by it and by ours, decode to equal requests
// with the specification's generated types.
func TestOTLPEncodingMatchesTheSDKExporter(t *testing.T) {
	spans := oracleSpans(t)
	ctx := context.Background()

	theirs := &capture{}
	srv := httptest.NewServer(theirs)
	t.Cleanup(srv.Close)
	sdkExp, err := otlptracehttp.New(ctx, otlptracehttp.WithEndpointURL(srv.URL+"/v1/traces"))
	if err != nil {
		t.Fatal(err)
	}
	if err := sdkExp.ExportSpans(ctx, spans); err != nil {
		t.Fatal(err)
	}

	for _, gz := range []bool{false, true} {
		ours := &capture{}
		srv2 := httptest.NewServer(ours)
		t.Cleanup(srv2.Close)
		exp, err := newOTLPExporter(OTLP{Endpoint: srv2.URL + "/v1/traces", Gzip: gz}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := exp.ExportSpans(ctx, spans); err != nil {
			t.Fatal(err)
		}
		want, got := theirs.request(t), ours.request(t)
		normalize(want)
		normalize(got)
		if diff := cmp.Diff(want, got, protocmp.Transform()); diff != "" {
			t.Errorf("gzip %v: our request differs from the SDK exporter's (-sdk +ours):\n%s", gz, diff)
		}
		if n := len(got.ResourceSpans); n != 2 {
			t.Errorf("%d resources, want 2", n)
		}
		if ct := ours.header.Get("Content-Type"); ct != "application/x-protobuf" {
			t.Errorf("Content-Type %q", ct)
		}
	}
}

// Encoding into a buffer that has room allocates nothing for the spans a
// turn records (scalar attributes, events, links, no trace state): the
// point of our own encoder. Slice and map values and a trace state cost
// the attribute API's copies.
func TestOTLPEncodingReusesItsBuffers(t *testing.T) {
	spans := oracleSpans(t)[1:]
	root := oracleSpans(t)[0]
	stub := tracetest.SpanStubFromReadOnlySpan(root)
	stub.SpanContext = stub.SpanContext.WithTraceState(trace.TraceState{})
	stub.Attributes = slices.DeleteFunc(stub.Attributes, func(kv attribute.KeyValue) bool {
		switch kv.Value.Type() {
		case attribute.BOOL, attribute.INT64, attribute.FLOAT64, attribute.STRING, attribute.BYTESLICE, attribute.EMPTY:
			return false
		}
		return true
	})
	spans = append(spans, stub.Snapshot())
	var e otlpEncoder
	buf := e.encode(nil, spans)
	if n := testing.AllocsPerRun(20, func() { buf = e.encode(buf[:0], spans) }); n != 0 {
		t.Errorf("%v allocations an encoding, want 0", n)
	}
}

func TestOTLPExporterRetries(t *testing.T) {
	spans := oracleSpans(t)[1:2]
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		switch calls.Add(1) {
		case 1:
			w.WriteHeader(http.StatusServiceUnavailable)
		case 2:
			w.WriteHeader(http.StatusTooManyRequests)
		default:
			w.Header().Set("Content-Type", "application/x-protobuf")
		}
	}))
	t.Cleanup(srv.Close)
	exp, err := newOTLPExporter(OTLP{Endpoint: srv.URL, Timeout: 5 * time.Second}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := exp.ExportSpans(context.Background(), spans); err != nil {
		t.Fatalf("after two retryable answers: %v", err)
	}
	if n := calls.Load(); n != 3 {
		t.Errorf("%d attempts, want 3", n)
	}
}

// A refusal is final and says why; a retryable failure gives up at the
// batch's timeout.
func TestOTLPExporterFailures(t *testing.T) {
	spans := oracleSpans(t)[1:2]
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		if strings.HasSuffix(r.URL.Path, "/bad") {
			http.Error(w, "invalid\nspans", http.StatusBadRequest)
			return
		}
		w.Header().Set("Retry-After", "1")
		w.WriteHeader(http.StatusServiceUnavailable)
	}))
	t.Cleanup(srv.Close)

	exp, _ := newOTLPExporter(OTLP{Endpoint: srv.URL + "/bad"}, nil)
	err := exp.ExportSpans(context.Background(), spans)
	if err == nil || !strings.Contains(err.Error(), "400 Bad Request: invalid spans") || calls.Load() != 1 {
		t.Errorf("400: %v after %d attempts", err, calls.Load())
	}

	calls.Store(0)
	exp, _ = newOTLPExporter(OTLP{Endpoint: srv.URL + "/busy", Timeout: 1500 * time.Millisecond}, nil)
	start := time.Now()
	err = exp.ExportSpans(context.Background(), spans)
	if err == nil || !strings.Contains(err.Error(), "503") {
		t.Errorf("503 until the timeout: %v", err)
	}
	// Retry-After 1 s within a 1.5 s timeout: one wait, two attempts, and
	// no third that would outlive the timeout.
	if n := calls.Load(); n != 2 {
		t.Errorf("%d attempts, want 2", n)
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("gave up after %s", d)
	}

	if err := exp.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := exp.ExportSpans(context.Background(), spans); err == nil {
		t.Error("an export after shutdown was accepted")
	}
}

// A partial success is reported to OpenTelemetry's error handler and is
// not an export error, as the SDK exporter does.
func TestOTLPExporterReportsPartialSuccess(t *testing.T) {
	resp, err := proto.Marshal(&coltracepb.ExportTraceServiceResponse{PartialSuccess: &coltracepb.ExportTracePartialSuccess{RejectedSpans: 2, ErrorMessage: "too old"}})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/x-protobuf")
		_, _ = w.Write(resp)
	}))
	t.Cleanup(srv.Close)
	var reported []error
	otel.SetErrorHandler(otel.ErrorHandlerFunc(func(err error) { reported = append(reported, err) }))
	t.Cleanup(func() { otel.SetErrorHandler(otel.ErrorHandlerFunc(func(error) {})) })
	exp, _ := newOTLPExporter(OTLP{Endpoint: srv.URL}, nil)
	if err := exp.ExportSpans(context.Background(), oracleSpans(t)[1:2]); err != nil {
		t.Fatal(err)
	}
	if len(reported) != 1 || !strings.Contains(reported[0].Error(), "2 spans rejected: too old") {
		t.Errorf("reported %v", reported)
	}
	if n, msg, ok := partialSuccess([]byte{0x0a, 0x03, 0x08}); ok || n != 0 || msg != "" {
		t.Errorf("a truncated answer read as %d %q %v", n, msg, ok)
	}
}

func TestOTLPFromEnv(t *testing.T) {
	env := func(kv ...string) func(string) string {
		m := map[string]string{}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return func(k string) string { return m[k] }
	}
	for _, tc := range []struct {
		name string
		env  func(string) string
		want OTLP
		err  string
	}{
		{"defaults", env(), OTLP{Endpoint: defaultOTLPEndpoint, Timeout: defaultOTLPTimeout}, ""},
		{"base endpoint gets the path", env("OTEL_EXPORTER_OTLP_ENDPOINT", "https://c.example:4318/"), OTLP{Endpoint: "https://c.example:4318/v1/traces", Timeout: defaultOTLPTimeout}, ""},
		{"traces endpoint as is, and it wins", env("OTEL_EXPORTER_OTLP_ENDPOINT", "http://a", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "http://b/custom"), OTLP{Endpoint: "http://b/custom", Timeout: defaultOTLPTimeout}, ""},
		{"headers decoded, traces ones win", env("OTEL_EXPORTER_OTLP_HEADERS", "a=1", "OTEL_EXPORTER_OTLP_TRACES_HEADERS", "api-key=s%20k%3D1, x = y ,"),
			OTLP{Endpoint: defaultOTLPEndpoint, Timeout: defaultOTLPTimeout, Headers: map[string]string{"api-key": "s k=1", "x": "y"}}, ""},
		{"timeout and gzip", env("OTEL_EXPORTER_OTLP_TIMEOUT", "2500", "OTEL_EXPORTER_OTLP_TRACES_COMPRESSION", "gzip"), OTLP{Endpoint: defaultOTLPEndpoint, Timeout: 2500 * time.Millisecond, Gzip: true}, ""},
		{"tls files", env("OTEL_EXPORTER_OTLP_CERTIFICATE", "/ca.pem", "OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE", "/c.pem", "OTEL_EXPORTER_OTLP_CLIENT_KEY", "/k.pem"),
			OTLP{Endpoint: defaultOTLPEndpoint, Timeout: defaultOTLPTimeout, CAFile: "/ca.pem", ClientCertFile: "/c.pem", ClientKeyFile: "/k.pem"}, ""},
		{"bad endpoint", env("OTEL_EXPORTER_OTLP_ENDPOINT", "collector:4318"), OTLP{}, "want an http or https URL"},
		{"bad header hides its value", env("OTEL_EXPORTER_OTLP_HEADERS", "api-key"), OTLP{}, `"api-key" is not key=value`},
		{"bad timeout", env("OTEL_EXPORTER_OTLP_TIMEOUT", "10s"), OTLP{}, "want milliseconds"},
		{"bad compression", env("OTEL_EXPORTER_OTLP_COMPRESSION", "zstd"), OTLP{}, "zstd"},
		{"grpc", env("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "grpc"), OTLP{}, "grpc"},
		{"key without certificate", env("OTEL_EXPORTER_OTLP_CLIENT_KEY", "/k.pem"), OTLP{}, "go together"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := otlpFromEnv(tc.env)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want one naming %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, *got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// The headers reach the collector; a value is never in an error.
func TestOTLPExporterSendsHeaders(t *testing.T) {
	c := &capture{}
	srv := httptest.NewServer(c)
	t.Cleanup(srv.Close)
	exp, err := newOTLPExporter(OTLP{Endpoint: srv.URL, Headers: map[string]string{"Api-Key": "k1"}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := exp.ExportSpans(context.Background(), oracleSpans(t)[1:2]); err != nil {
		t.Fatal(err)
	}
	if got := c.header.Get("Api-Key"); got != "k1" {
		t.Errorf("Api-Key %q", got)
	}
	if _, err := parseOTLPHeaders("token=abc%zz"); err == nil || strings.Contains(err.Error(), "abc") {
		t.Errorf("a bad header's error %v shows its value", err)
	}
	if _, err := (OTLP{CAFile: "/nonexistent/ca.pem"}).transport(); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a missing CA file: %v", err)
	}
}
