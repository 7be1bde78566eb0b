package tracing

import (
	"net/http"
	"strconv"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/smithy-go/middleware"
	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/propagation"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
	"go.opentelemetry.io/otel/trace"
)

// HTTPClient is a copy of c whose calls are client spans (otelhttp) and
// carry the trace context on (traceparent), e.g. to the sandbox broker or
// the Durable Object runtime. A request made inside a client span of its
// own (a model call's "chat {model}", which the GenAI conventions make
// the call's CLIENT span) gets no second one: the OpenTelemetry rule that
// nested client spans of one call are suppressed. That call's HTTP facts
// and traceparent come from ClientSpanHTTP instead.
func HTTPClient(c *http.Client) *http.Client {
	out := *c
	base := c.Transport
	if base == nil {
		base = http.DefaultTransport
	}
	out.Transport = otelhttp.NewTransport(base, otelhttp.WithFilter(func(r *http.Request) bool {
		_, inClient := clientSpan(r)
		return !inClient
	}))
	return &out
}

// ClientSpanHTTP is a client middleware (openai-go's option.Middleware)
// for a call whose span is already its CLIENT span: it puts the trace
// context on the request (traceparent, so LiteLLM's own spans join the
// turn's) and records on that span what otelhttp's span would have held:
// server.address, server.port and the response's status. The request is
// the client's own copy for this attempt, so its headers are set in
// place, not cloned. Outside a client span it only passes the request on.
func ClientSpanHTTP(r *http.Request, next func(*http.Request) (*http.Response, error)) (*http.Response, error) {
	span, ok := clientSpan(r)
	if !ok {
		return next(r)
	}
	otel.GetTextMapPropagator().Inject(r.Context(), propagation.HeaderCarrier(r.Header))
	resp, err := next(r)
	attrs := make([]attribute.KeyValue, 0, 3)
	host, port := r.URL.Hostname(), r.URL.Port()
	attrs = append(attrs, semconv.ServerAddress(host))
	if p, perr := strconv.Atoi(port); perr == nil {
		attrs = append(attrs, semconv.ServerPort(p))
	} else if p := defaultPort(r.URL.Scheme); p != 0 {
		attrs = append(attrs, semconv.ServerPort(p))
	}
	if err == nil {
		attrs = append(attrs, semconv.HTTPResponseStatusCode(resp.StatusCode))
	}
	span.SetAttributes(attrs...)
	return resp, err
}

// clientSpan is r's current span when it is a recording CLIENT span.
func clientSpan(r *http.Request) (trace.Span, bool) {
	span := trace.SpanFromContext(r.Context())
	k, ok := span.(interface{ SpanKind() trace.SpanKind })
	return span, ok && span.IsRecording() && k.SpanKind() == trace.SpanKindClient
}

func defaultPort(scheme string) int {
	switch scheme {
	case "http":
		return 80
	case "https":
		return 443
	}
	return 0
}

// InstrumentAWS adds client spans (addAWSSpans: operation, table names,
// request id) to every call of the SDK clients built from cfg.
func InstrumentAWS(cfg *aws.Config) { InstrumentAWSOptions(&cfg.APIOptions) }

// InstrumentAWSOptions is InstrumentAWS for one client's APIOptions
// (dynamodb.Options.APIOptions, ...), for a client built without an
// aws.Config (the local stack's).
func InstrumentAWSOptions(apiOptions *[]func(*middleware.Stack) error) {
	*apiOptions = append(*apiOptions, addAWSSpans)
}
