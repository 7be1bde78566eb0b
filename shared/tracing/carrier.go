package tracing

import (
	"context"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/propagation"
)

// Inject returns ctx's trace context as W3C Trace Context fields
// (traceparent, tracestate), for a payload that crosses an asynchronous
// hop (the turn's dispatch event); nil when tracing is off.
func Inject(ctx context.Context) map[string]string {
	c := propagation.MapCarrier{}
	otel.GetTextMapPropagator().Inject(ctx, c)
	if len(c) == 0 {
		return nil
	}
	return c
}

// Extract returns ctx with the remote span context carried in fields
// (what Inject returned); ctx unchanged when there is none.
func Extract(ctx context.Context, fields map[string]string) context.Context {
	if len(fields) == 0 {
		return ctx
	}
	return otel.GetTextMapPropagator().Extract(ctx, propagation.MapCarrier(fields))
}
