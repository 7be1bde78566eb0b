package tracing

import (
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// BenchmarkOTLPExport is one kept turn's export through the maintained
// exporter: its ~22 spans encoded and posted to a collector that reads
// and discards them (the collector's work is in the numbers too).
func BenchmarkOTLPExport(b *testing.B) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/x-protobuf")
	}))
	b.Cleanup(srv.Close)
	exp, err := newOTLPExporter(b.Context(), OTLP{Endpoint: srv.URL + "/v1/traces"}, nil)
	if err != nil {
		b.Fatal(err)
	}
	one := testSpans(b)
	var spans []sdktrace.ReadOnlySpan
	for len(spans) < 22 {
		spans = append(spans, one...)
	}
	spans = spans[:22]
	ctx := b.Context()
	b.ReportAllocs()
	for b.Loop() {
		if err := exp.ExportSpans(ctx, spans); err != nil {
			b.Fatal(err)
		}
	}
}
