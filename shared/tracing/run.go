package tracing

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/commonly/runtime/shared/runs"
)

// RunStarted are the attributes a run has from its admission: ids and
// the engine.
func RunStarted(r *runs.Run) []attribute.KeyValue {
	return []attribute.KeyValue{
		RunID.String(r.RunID), InstallID.String(r.InstallID), UserID.String(r.UserID), Engine.String(r.Engine),
	}
}

// RunEnded records a run's outcome on a turn's root span: its status and
// errorKind, its tokens and cost; a run that did not succeed marks the
// span failed, which keeps its trace (tail.go).
func RunEnded(span trace.Span, r *runs.Run) {
	if r == nil || !span.IsRecording() {
		return
	}
	// One SetAttributes: each call locks the span and may grow its
	// attributes.
	attrs := append(make([]attribute.KeyValue, 0, 13), RunStarted(r)...)
	attrs = append(attrs,
		RunStatus.String(string(r.Status)),
		semconv.GenAIUsageInputTokens(int(r.Tokens.Prompt)),
		semconv.GenAIUsageCacheReadInputTokens(int(r.Tokens.CachedPrompt)),
		semconv.GenAIUsageOutputTokens(int(r.Tokens.Completion)),
		TotalTokens.Int64(r.Tokens.Total),
		CostMicros.Int64(int64(r.CostMicros)),
		Refunded.Bool(r.Refunded),
	)
	if r.Model != "" {
		attrs = append(attrs, semconv.GenAIRequestModel(r.Model))
	}
	if r.ErrorKind != "" {
		attrs = append(attrs, ErrorKind.String(string(r.ErrorKind)))
	}
	span.SetAttributes(attrs...)
	if r.Status.Final() && r.Status != runs.StatusSucceeded {
		Fail(span, string(r.ErrorKind))
	}
}

// LinkToRun is a link to the trace a run was admitted in, from the ids on
// its record; false for a run recorded without tracing.
func LinkToRun(r *runs.Run) (trace.Link, bool) {
	if r == nil {
		return trace.Link{}, false
	}
	l, ok := LinkTo(r.TraceID, r.TraceSpanID)
	if ok {
		l.Attributes = []attribute.KeyValue{RunID.String(r.RunID)}
	}
	return l, ok
}

// LinkRun links the span in ctx (a reaper sweep, the alarm's batch) to
// the trace run was admitted in, when it has one.
func LinkRun(ctx context.Context, r *runs.Run) {
	if l, ok := LinkToRun(r); ok {
		trace.SpanFromContext(ctx).AddLink(l)
	}
}
