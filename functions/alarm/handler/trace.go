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
	var links []trace.Link
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
			links = append(links, l)
		}
	}
	return tracing.Start(ctx, "alarm.stream_batch", trace.WithNewRoot(), trace.WithSpanKind(trace.SpanKindConsumer),
		trace.WithLinks(links...), trace.WithAttributes(tracing.Runs.Int(len(ev.Records))))
}

// endBatch records the batch's outcome and ends its span.
func endBatch(span trace.Span, res ledger.Result) {
	span.SetAttributes(attribute.Int("commonly.alarm.processed", res.Processed), attribute.Int("commonly.alarm.failed", res.FailedRecords),
		attribute.Int("commonly.alarm.skipped", len(res.Skipped)), attribute.Int("commonly.alarm.alarms", res.Alarms),
		tracing.CostMicros.Int64(int64(res.CostMicros)))
	if res.FailedRecords > 0 || len(res.Skipped) > 0 {
		tracing.Fail(span, "records_not_counted")
	}
	span.End()
}
