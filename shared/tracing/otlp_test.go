package tracing

import (
	"compress/gzip"
	"errors"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/sdk/instrumentation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/google/go-cmp/cmp"
)

// testSpans are a turn's worth of span shapes: a failed server span with
// an event and a link, a client span and an internal one of another
// resource.
func testSpans(t testing.TB) []sdktrace.ReadOnlySpan {
	t.Helper()
	turn := resource.NewSchemaless(attribute.String("service.name", "commonly-turn"))
	alarm := resource.NewSchemaless(attribute.String("service.name", "commonly-alarm"))
	tid := trace.TraceID{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}
	sc := func(span byte) trace.SpanContext {
		return trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: trace.SpanID{span, 1}, TraceFlags: trace.FlagsSampled})
	}
	start := time.Date(2026, 12, 4, 17, 0, 0, 0, time.UTC)
	scope := instrumentation.Scope{Name: ScopeName}
	return tracetest.SpanStubs{
		{Name: "turn", SpanContext: sc(1), SpanKind: trace.SpanKindServer, StartTime: start, EndTime: start.Add(time.Second),
			Attributes: []attribute.KeyValue{RunID.String("run-1"), attribute.Int64("gen_ai.usage.input_tokens", 12)},
			Status:     sdktrace.Status{Code: codes.Error, Description: "model failed"},
			Events:     []sdktrace.Event{{Name: "exception", Time: start}},
			Links:      []sdktrace.Link{{SpanContext: sc(9)}},
			Resource:   turn, InstrumentationScope: scope},
		{Name: "chat m", SpanContext: sc(2), Parent: sc(1), SpanKind: trace.SpanKindClient, StartTime: start, EndTime: start.Add(time.Second),
			Resource: turn, InstrumentationScope: scope},
		{Name: "alarm", SpanContext: sc(3), StartTime: start, EndTime: start, Resource: alarm, InstrumentationScope: scope},
	}.Snapshots()
}

// capture serves OTLP/HTTP and keeps each request's body, decompressed.
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

// An export reaches the collector as the specification's protobuf
// request, gzipped when configured, with the configured headers.
func TestOTLPExportReachesTheCollector(t *testing.T) {
	for _, gz := range []bool{false, true} {
		c := &capture{}
		srv := httptest.NewServer(c)
		t.Cleanup(srv.Close)
		exp, err := newOTLPExporter(t.Context(), OTLP{Endpoint: srv.URL + "/v1/traces", Gzip: gz, Headers: map[string]string{"Api-Key": "k1"}}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := exp.ExportSpans(t.Context(), testSpans(t)); err != nil {
			t.Fatal(err)
		}
		req := c.request(t)
		var got []string
		for _, rs := range req.ResourceSpans {
			for _, ss := range rs.ScopeSpans {
				for _, s := range ss.Spans {
					got = append(got, rs.Resource.Attributes[0].Value.GetStringValue()+"/"+ss.Scope.Name+"/"+s.Name+"/"+s.Status.GetCode().String())
				}
			}
		}
		slices.Sort(got)
		want := []string{
			"commonly-alarm/" + ScopeName + "/alarm/STATUS_CODE_UNSET",
			"commonly-turn/" + ScopeName + "/chat m/STATUS_CODE_UNSET",
			"commonly-turn/" + ScopeName + "/turn/STATUS_CODE_ERROR",
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("gzip %v: spans (-want +got):\n%s", gz, diff)
		}
		h := c.header
		if h.Get("Content-Type") != "application/x-protobuf" || h.Get("Api-Key") != "k1" || (h.Get("Content-Encoding") == "gzip") != gz {
			t.Errorf("gzip %v: headers %v", gz, h)
		}
	}
}

// 503 and 429 are retried, with backoff, within the batch's timeout.
func TestOTLPExporterRetries(t *testing.T) {
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
	exp, err := newOTLPExporter(t.Context(), OTLP{Endpoint: srv.URL, Timeout: 5 * time.Second}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := exp.ExportSpans(t.Context(), testSpans(t)[1:2]); err != nil {
		t.Fatalf("after two retryable answers: %v", err)
	}
	if n := calls.Load(); n != 3 {
		t.Errorf("%d attempts, want 3", n)
	}
}

// A refusal is final and says why; a retryable failure waits the
// Retry-After and gives up at the batch's timeout; a partial success is
// reported, not retried.
func TestOTLPExporterFailures(t *testing.T) {
	partial, err := proto.Marshal(&coltracepb.ExportTraceServiceResponse{PartialSuccess: &coltracepb.ExportTracePartialSuccess{RejectedSpans: 2, ErrorMessage: "too old"}})
	if err != nil {
		t.Fatal(err)
	}
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		switch {
		case strings.HasSuffix(r.URL.Path, "/bad"):
			http.Error(w, "invalid spans", http.StatusBadRequest)
		case strings.HasSuffix(r.URL.Path, "/partial"):
			w.Header().Set("Content-Type", "application/x-protobuf")
			_, _ = w.Write(partial)
		default:
			w.Header().Set("Retry-After", "1")
			w.WriteHeader(http.StatusServiceUnavailable)
		}
	}))
	t.Cleanup(srv.Close)
	spans := testSpans(t)[1:2]

	exp, _ := newOTLPExporter(t.Context(), OTLP{Endpoint: srv.URL + "/bad"}, nil)
	err = exp.ExportSpans(t.Context(), spans)
	if err == nil || !strings.Contains(err.Error(), "400 Bad Request") || !strings.Contains(err.Error(), "invalid spans") || calls.Load() != 1 {
		t.Errorf("400: %v after %d attempts", err, calls.Load())
	}

	calls.Store(0)
	exp, _ = newOTLPExporter(t.Context(), OTLP{Endpoint: srv.URL + "/partial"}, nil)
	err = exp.ExportSpans(t.Context(), spans)
	if err == nil || !strings.Contains(err.Error(), "too old") || !strings.Contains(err.Error(), "2 spans rejected") || calls.Load() != 1 {
		t.Errorf("partial success: %v after %d attempts", err, calls.Load())
	}

	calls.Store(0)
	exp, _ = newOTLPExporter(t.Context(), OTLP{Endpoint: srv.URL + "/busy", Timeout: 1500 * time.Millisecond}, nil)
	start := time.Now()
	err = exp.ExportSpans(t.Context(), spans)
	if err == nil || !strings.Contains(err.Error(), "503") && !strings.Contains(err.Error(), "retry") {
		t.Errorf("503 until the timeout: %v", err)
	}
	// Retry-After 1 s within a 1.5 s timeout: one wait of a second, two
	// attempts, and no third that would outlive the timeout.
	if n := calls.Load(); n != 2 {
		t.Errorf("%d attempts, want 2", n)
	}
	if d := time.Since(start); d < time.Second || d > 3*time.Second {
		t.Errorf("gave up after %s", d)
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

// A header's value (a collector's API key) is in no error: not a bad
// header's, not a refused, retried or unreachable export's.
func TestOTLPErrorsHideHeaderValues(t *testing.T) {
	const key = "otlp-key-7c1e"
	if _, err := parseOTLPHeaders("token=" + key + "%zz"); err == nil || strings.Contains(err.Error(), key) {
		t.Errorf("a bad header's error %v shows its value", err)
	}
	if _, err := (OTLP{CAFile: "/nonexistent/ca.pem"}).transport(); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a missing CA file: %v", err)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/busy") {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		http.Error(w, "unauthorized", http.StatusUnauthorized)
	}))
	t.Cleanup(srv.Close)
	closed := httptest.NewServer(http.NotFoundHandler())
	closed.Close()
	for _, url := range []string{srv.URL + "/v1/traces", srv.URL + "/busy", closed.URL + "/v1/traces"} {
		exp, err := newOTLPExporter(t.Context(), OTLP{Endpoint: url, Timeout: 300 * time.Millisecond, Headers: map[string]string{"Api-Key": key}}, nil)
		if err != nil {
			t.Fatal(err)
		}
		err = exp.ExportSpans(t.Context(), testSpans(t))
		if err == nil || strings.Contains(err.Error(), key) {
			t.Errorf("%s: error %v", url, err)
		}
	}
}
