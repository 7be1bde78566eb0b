package handler

import (
	"context"
	"github.com/commonly/runtime/shared/dispatch"
	"net/http"

	"github.com/aws/aws-lambda-go/events"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"

	"github.com/commonly/runtime/shared/tracing"
)

// startRequest starts the server span of one API request: the root of a
// turn's trace. Its name is the route once matched (endRequest).
func startRequest(ctx context.Context, req *events.APIGatewayV2HTTPRequest) (context.Context, trace.Span) {
	return tracing.Start(ctx, req.RequestContext.HTTP.Method, trace.WithSpanKind(trace.SpanKindServer), trace.WithAttributes(
		semconv.HTTPRequestMethodKey.String(req.RequestContext.HTTP.Method),
		attribute.String("aws.request_id", req.RequestContext.RequestID),
	))
}

// endRequest names the span after its route, records the response's
// status (a 5xx fails the span) and ends it.
func endRequest(span trace.Span, routeKey string, status int) {
	if span.IsRecording() {
		if routeKey != "" && routeKey != "$default" {
			span.SetName(routeKey)
			span.SetAttributes(semconv.HTTPRoute(routeKey), semconv.HTTPResponseStatusCode(status))
		} else {
			span.SetAttributes(semconv.HTTPResponseStatusCode(status))
		}
		if status >= http.StatusInternalServerError {
			tracing.Fail(span, http.StatusText(status))
		}
	}
	span.End()
}

// startDispatch starts the span of a dispatched turn's invocation, a
// child of the API request that admitted it (the trace context its
// dispatch event carries).
func startDispatch(ctx context.Context, d *dispatch.Dispatch) (context.Context, trace.Span) {
	ctx = tracing.Extract(ctx, d.Trace)
	return tracing.Start(ctx, "turn.dispatched", trace.WithSpanKind(trace.SpanKindConsumer), trace.WithAttributes(tracing.RunID.String(d.RunID)))
}
