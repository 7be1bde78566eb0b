package turns_test

import (
	"context"
	"testing"
	"time"

	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/commonly/runtime/shared/tracing"
	"github.com/commonly/runtime/shared/turns"
)

// A run records the trace it was admitted in, and a reaper's sweep that
// closes it is linked to that trace.
func TestClosingARunLinksItsTrace(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	tp, err := tracing.Setup(context.Background(), tracing.Config{Exporter: exp, SampleRatio: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	r, rc := reaperRig(t, rigOpts{})

	reqCtx, req := tracing.Start(context.Background(), "request")
	sub, err := r.svc.Submit(reqCtx, user, "inst-1", turns.TurnRequest{Message: "hi"})
	req.End()
	if err != nil {
		t.Fatal(err)
	}
	run := sub.Run
	if run.TraceID != tracing.TraceID(reqCtx) || run.TraceSpanID != tracing.SpanID(reqCtx) {
		t.Fatalf("run trace = %s/%s, want the request's %s/%s", run.TraceID, run.TraceSpanID, tracing.TraceID(reqCtx), tracing.SpanID(reqCtx))
	}

	r.clock.Set(run.CreatedAt.Add(turns.RunMaxLife + time.Millisecond))
	sweepCtx, sweep := tracing.Start(context.Background(), "reaper.sweep", trace.WithNewRoot())
	res, err := rc.Interrupt(sweepCtx, run.RunID)
	sweep.End()
	if err != nil || !res.Closed {
		t.Fatalf("interrupt: %+v %v", res, err)
	}
	if err := tp.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	for _, s := range exp.GetSpans() {
		if s.Name != "reaper.sweep" {
			continue
		}
		if len(s.Links) != 1 || s.Links[0].SpanContext.TraceID().String() != run.TraceID || s.Links[0].SpanContext.SpanID().String() != run.TraceSpanID {
			t.Fatalf("sweep links = %+v, want the run's trace %s", s.Links, run.TraceID)
		}
		return
	}
	t.Fatal("no sweep span exported")
}
