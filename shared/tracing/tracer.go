package tracing

import (
	"context"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
)

// ScopeName is the instrumentation scope of the runtime's own spans.
const ScopeName = "github.com/commonly/runtime"

// Tracer is the runtime's tracer on the global provider. It is looked up
// on each call so that a provider set up after a package was initialised
// (or replaced by a test) is the one used.
func Tracer() trace.Tracer { return otel.Tracer(ScopeName) }

// Start starts an internal span of the runtime.
func Start(ctx context.Context, name string, opts ...trace.SpanStartOption) (context.Context, trace.Span) {
	return Tracer().Start(ctx, name, opts...)
}

// Fail marks span failed with a fixed kind: error.type and the status
// carry the kind, never an error's text, which can quote an upstream
// body (the scrubber would catch a secret in it, not a user's content).
func Fail(span trace.Span, kind string) {
	if kind == "" {
		kind = "_OTHER"
	}
	span.SetAttributes(ErrorType.String(kind))
	span.SetStatus(codes.Error, kind)
}

// TraceID is ctx's trace id in hex, "" when ctx carries no valid span
// (tracing off).
func TraceID(ctx context.Context) string {
	sc := trace.SpanContextFromContext(ctx)
	if !sc.IsValid() {
		return ""
	}
	return sc.TraceID().String()
}

// SpanID is ctx's span id in hex, "" when ctx carries no valid span.
func SpanID(ctx context.Context) string {
	sc := trace.SpanContextFromContext(ctx)
	if !sc.IsValid() {
		return ""
	}
	return sc.SpanID().String()
}

// LinkTo is a link to the span traceID/spanID (as TraceID and SpanID
// return them, e.g. from a run's record); false when they do not parse.
func LinkTo(traceID, spanID string) (trace.Link, bool) {
	tid, err := trace.TraceIDFromHex(traceID)
	if err != nil {
		return trace.Link{}, false
	}
	sid, err := trace.SpanIDFromHex(spanID)
	if err != nil {
		return trace.Link{}, false
	}
	sc := trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: sid, TraceFlags: trace.FlagsSampled, Remote: true})
	return trace.Link{SpanContext: sc}, true
}
