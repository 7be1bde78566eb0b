package bench

import (
	"context"
	"log/slog"
	"net/http/httptest"
	"testing"

	"github.com/commonly/runtime/bench/internal/otlpsink"
	"github.com/commonly/runtime/shared/tracing"
)

// benchAPITraced is Turn/api with tracing on, every turn kept and
// exported, the provider flushed after each turn (tracing.WithFlush in
// each function's main).
func benchAPITraced(b *testing.B) {
	sink := &otlpsink.Sink{}
	srv := httptest.NewServer(sink)
	b.Cleanup(srv.Close)
	ctx := context.Background()
	tp, err := tracing.Setup(ctx, tracing.Config{ServiceName: "commonly-turn", OTLP: &tracing.OTLP{Endpoint: srv.URL + "/v1/traces"}, SampleRatio: 1})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = tp.Shutdown(ctx) })
	r := newTracedRig(b, slog.LevelWarn, tp)
	measure(b, r, func() error {
		if _, err := r.client.Turn(ctx); err != nil {
			return err
		}
		return tp.Flush(ctx)
	})
	if sink.Exports() == 0 {
		b.Fatal("no spans reached the collector")
	}
	b.ReportMetric(sink.BytesPerExport(), "otlp-bytes/export")
}
