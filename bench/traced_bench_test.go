package bench

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/commonly/runtime/shared/tracing"
)

// otlpSink is an OTLP/HTTP collector that reads and discards every export
// (an empty ExportTraceServiceResponse), counting them.
type otlpSink struct{ exports, bytes atomic.Int64 }

func (s *otlpSink) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	n, _ := io.Copy(io.Discard, r.Body)
	s.exports.Add(1)
	s.bytes.Add(n)
	w.Header().Set("Content-Type", "application/x-protobuf")
	w.WriteHeader(http.StatusOK)
}

// benchAPITraced is Turn/api with tracing on, every turn kept and
// exported, the provider flushed after each turn (tracing.WithFlush in
// each function's main).
func benchAPITraced(b *testing.B) {
	sink := &otlpSink{}
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
	if sink.exports.Load() == 0 {
		b.Fatal("no spans reached the collector")
	}
	b.ReportMetric(float64(sink.bytes.Load())/float64(sink.exports.Load()), "otlp-bytes/export")
}
