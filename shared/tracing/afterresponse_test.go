package tracing_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/commonly/runtime/shared/tracing"
)

// extensionsAPI is a stand-in for Lambda's Extensions API as its public
// reference describes it: register (POST, Lambda-Extension-Name, the
// events; answers Lambda-Extension-Identifier) and event/next (GET with
// that identifier; answers when the next invocation starts).
type extensionsAPI struct {
	refuse  bool
	nexts   chan struct{} // each next asked for
	invokes chan string   // events to answer next with
	done    chan struct{}
	t       *testing.T
}

func (x *extensionsAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch {
	case r.Method == http.MethodPost && r.URL.Path == "/2020-01-01/extension/register":
		var body struct{ Events []string }
		_ = json.NewDecoder(r.Body).Decode(&body)
		if r.Header.Get("Lambda-Extension-Name") != tracing.ExtensionName || len(body.Events) != 1 || body.Events[0] != "INVOKE" {
			x.t.Errorf("register: name %q events %v", r.Header.Get("Lambda-Extension-Name"), body.Events)
		}
		if x.refuse {
			http.Error(w, `{"errorType":"Extension.Forbidden"}`, http.StatusForbidden)
			return
		}
		w.Header().Set("Lambda-Extension-Identifier", "ext-7")
		_, _ = io.WriteString(w, `{"functionName":"f","functionVersion":"$LATEST","handler":"bootstrap"}`)
	case r.Method == http.MethodGet && r.URL.Path == "/2020-01-01/extension/event/next":
		if r.Header.Get("Lambda-Extension-Identifier") != "ext-7" {
			x.t.Errorf("next without the identifier: %q", r.Header.Get("Lambda-Extension-Identifier"))
		}
		x.nexts <- struct{}{}
		select {
		case ev := <-x.invokes:
			_, _ = io.WriteString(w, ev)
		case <-x.done:
		}
	default:
		http.NotFound(w, r)
	}
}

func invokeEvent() string {
	return `{"eventType":"INVOKE","deadlineMs":` + jsonInt(time.Now().Add(time.Minute).UnixMilli()) + `,"requestId":"req-1","invokedFunctionArn":"arn:aws:lambda:us-east-1:1:function:f","tracing":{}}`
}

func jsonInt(n int64) string { b, _ := json.Marshal(n); return string(b) }

// collector is an OTLP/HTTP endpoint whose answer waits for release.
type collector struct {
	got     chan struct{}
	release chan struct{}
}

func (c *collector) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	_, _ = io.Copy(io.Discard, r.Body)
	c.got <- struct{}{}
	<-c.release
	w.Header().Set("Content-Type", "application/x-protobuf")
}

func startExtensionTest(t *testing.T, refuse bool) (*extensionsAPI, *collector, *tracing.Provider) {
	t.Helper()
	x := &extensionsAPI{refuse: refuse, nexts: make(chan struct{}, 4), invokes: make(chan string), done: make(chan struct{}), t: t}
	api := httptest.NewServer(x)
	col := &collector{got: make(chan struct{}, 4), release: make(chan struct{})}
	sink := httptest.NewServer(col)
	t.Cleanup(func() {
		close(x.done)
		select {
		case <-col.release:
		default:
			close(col.release)
		}
		sink.Close()
		api.Close()
	})
	env := map[string]string{
		"AWS_LAMBDA_RUNTIME_API":      strings.TrimPrefix(api.URL, "http://"),
		"OTEL_EXPORTER_OTLP_ENDPOINT": sink.URL,
	}
	tp, err := tracing.ForFunction(context.Background(), func(k string) string { return env[k] }, "svc", &aws.Config{Region: "us-east-1"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	return x, col, tp
}

func within(t *testing.T, c <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-c:
	case <-time.After(5 * time.Second):
		t.Fatalf("%s did not happen", what)
	}
}

// In Lambda the spans leave after the response: the handler answers
// while the export is still waiting for the collector, and the extension
// asks for its next event (which lets Lambda freeze the environment or
// start another invocation) only once the export is done.
func TestSpansLeaveAfterTheResponse(t *testing.T) {
	x, col, tp := startExtensionTest(t, false)
	within(t, x.nexts, "the extension's first next (the end of its init)")
	h := tracing.WithFlush(tp, slog.Default(), func(ctx context.Context, _ string) (string, error) {
		_, span := tracing.Start(ctx, "work")
		span.End()
		return "answer", nil
	})
	x.invokes <- invokeEvent()
	answered := make(chan struct{})
	go func() {
		if out, err := h(context.Background(), "event"); out != "answer" || err != nil {
			t.Errorf("handler: %q %v", out, err)
		}
		close(answered)
	}()
	within(t, answered, "the answer while the export waits")
	within(t, col.got, "the export")
	select {
	case <-x.nexts:
		t.Fatal("the extension asked for its next event before the export was done")
	default:
	}
	close(col.release)
	within(t, x.nexts, "the next event asked for once the spans are out")
}

// When Lambda refuses the extension, each invocation exports its own
// spans before it answers, as without one.
func TestSpansLeaveBeforeTheResponseWithoutTheExtension(t *testing.T) {
	_, col, tp := startExtensionTest(t, true)
	h := tracing.WithFlush(tp, slog.Default(), func(ctx context.Context, _ string) (string, error) {
		_, span := tracing.Start(ctx, "work")
		span.End()
		return "answer", nil
	})
	answered := make(chan struct{})
	go func() {
		_, _ = h(context.Background(), "event")
		close(answered)
	}()
	within(t, col.got, "the export")
	select {
	case <-answered:
		t.Fatal("the handler answered before its spans were exported")
	default:
	}
	close(col.release)
	within(t, answered, "the answer after the export")
}

// The gate (ExportAfterResponse, for a process serving requests itself):
// a request answers before its export is done, and the next one starts
// only after it.
func TestGateHoldsTheNextRequestUntilTheExport(t *testing.T) {
	col := &collector{got: make(chan struct{}, 4), release: make(chan struct{})}
	sink := httptest.NewServer(col)
	t.Cleanup(sink.Close)
	tp, err := tracing.Setup(context.Background(), tracing.Config{ServiceName: "svc", OTLP: &tracing.OTLP{Endpoint: sink.URL + "/v1/traces"}, SampleRatio: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	if err := tp.ExportAfterResponse(slog.Default()); err != nil {
		t.Fatal(err)
	}
	started := make(chan struct{}, 2)
	h := tracing.WithFlushHTTP(tp, slog.Default(), http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		started <- struct{}{}
		_, span := tracing.Start(r.Context(), "work")
		span.End()
	}))
	h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, "/", nil))
	within(t, started, "the first request")
	within(t, col.got, "the first request's export")
	second := make(chan struct{})
	go func() {
		h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, "/", nil))
		close(second)
	}()
	select {
	case <-started:
		t.Fatal("the second request started before the first one's export was done")
	case <-time.After(100 * time.Millisecond):
	}
	close(col.release)
	within(t, started, "the second request, once the export is done")
	within(t, second, "the second request's end")
}
