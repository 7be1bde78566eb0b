package handler_test

import (
	"context"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/commonly/runtime/shared/tracing"
)

// A stream batch is a trace of its own, linked to the trace of each run
// whose record it carries (the traceId and traceSpanId on its image).
func TestBatchIsLinkedToItsRunsTraces(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	tp, err := tracing.Setup(context.Background(), tracing.Config{Exporter: exp, SampleRatio: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	const traceID, spanID = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
	hs := newHarness(t, nil)
	records := loadRecords(t, "run-succeeded.json")
	records[0].Change.NewImage["traceId"] = events.NewStringAttribute(traceID)
	records[0].Change.NewImage["traceSpanId"] = events.NewStringAttribute(spanID)
	hs.handle(records)
	if err := tp.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	var batch *tracetest.SpanStub
	for _, s := range exp.GetSpans() {
		if s.Name == "alarm.stream_batch" {
			batch = &s
		}
	}
	if batch == nil {
		t.Fatalf("no batch span in %v", exp.GetSpans())
	}
	if batch.Parent.IsValid() || batch.SpanContext.TraceID().String() == traceID {
		t.Errorf("the batch should be a trace of its own: parent %v, trace %s", batch.Parent, batch.SpanContext.TraceID())
	}
	if len(batch.Links) != 1 || batch.Links[0].SpanContext.TraceID().String() != traceID || batch.Links[0].SpanContext.SpanID().String() != spanID {
		t.Errorf("links = %+v, want the run's trace", batch.Links)
	}
}
