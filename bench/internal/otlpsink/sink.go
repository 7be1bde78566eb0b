// Package otlpsink is the benchmarks' OTLP/HTTP collector: it reads and
// discards every export, counting them, so that what a traced turn costs
// is measured up to the collector and not beyond.
package otlpsink

import (
	"io"
	"net/http"
	"sync/atomic"
)

// Sink answers each export with an empty ExportTraceServiceResponse.
type Sink struct{ exports, bytes atomic.Int64 }

func (s *Sink) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	n, _ := io.Copy(io.Discard, r.Body)
	s.exports.Add(1)
	s.bytes.Add(n)
	w.Header().Set("Content-Type", "application/x-protobuf")
	w.WriteHeader(http.StatusOK)
}

// Exports is how many exports arrived.
func (s *Sink) Exports() int64 { return s.exports.Load() }

// BytesPerExport is the mean body of an export (0 before the first).
func (s *Sink) BytesPerExport() float64 {
	n := s.exports.Load()
	if n == 0 {
		return 0
	}
	return float64(s.bytes.Load()) / float64(n)
}
