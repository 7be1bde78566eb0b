package handler

import (
	"context"

	"github.com/aws/aws-lambda-go/events"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/commonly/runtime/shared/ledger"
	"github.com/commonly/runtime/shared/tracing"
)

// startBatch starts the span of one stream batch: a trace of its own (a
// batch holds many runs' records), linked to the trace of each run whose
// record it carries, from the traceId and traceSpanId on the run's image.
func startBatch(ctx context.Context, ev events.DynamoDBEvent) (context.Context, trace.Span) {
	ctx, span := tracing.Start(ctx, "alarm.stream_batch", trace.WithNewRoot(), trace.WithSpanKind(trace.SpanKindConsumer),
		trace.WithAttributes(tracing.Runs.Int(len(ev.Records))))
	if !span.IsRecording() {
		return ctx, span // tracing off: no link to read, parse or build
	}
	for _, r := range ev.Records {
		img := r.Change.NewImage
		if img == nil {
			img = r.Change.OldImage
		}
		tid, sid := img["traceId"], img["traceSpanId"]
		if tid.DataType() != events.DataTypeString || sid.DataType() != events.DataTypeString {
			continue
		}
		if l, ok := tracing.LinkTo(tid.String(), sid.String()); ok {
			l.Attributes = []attribute.KeyValue{tracing.RunID.String(img["runId"].String()), attribute.String("commonly.stream.event", r.EventName)}
			span.AddLink(l)
		}
	}
	return ctx, span
}

// endBatch records the batch's outcome and ends its span.
func endBatch(span trace.Span, res ledger.Result) {
	defer span.End()
	if !span.IsRecording() {
		return
	}
	span.SetAttributes(attribute.Int("commonly.alarm.processed", res.Processed), attribute.Int("commonly.alarm.failed", res.FailedRecords),
		attribute.Int("commonly.alarm.skipped", len(res.Skipped)), attribute.Int("commonly.alarm.alarms", res.Alarms),
		tracing.CostMicros.Int64(int64(res.CostMicros)))
	if res.FailedRecords > 0 || len(res.Skipped) > 0 {
		tracing.Fail(span, "records_not_counted")
	}
}
