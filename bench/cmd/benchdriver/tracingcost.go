package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"sync/atomic"
	"time"

	"github.com/commonly/runtime/bench/internal/script"
)

// otlpSink is an OTLP/HTTP collector that reads and discards every export
// (an empty ExportTraceServiceResponse), counting them. It runs in the
// driver, so its work is not in the turn process's CPU: in AWS the
// collector is X-Ray's.
type otlpSink struct{ exports, bytes atomic.Int64 }

func (s *otlpSink) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	n, _ := io.Copy(io.Discard, r.Body)
	s.exports.Add(1)
	s.bytes.Add(n)
	w.Header().Set("Content-Type", "application/x-protobuf")
	w.WriteHeader(http.StatusOK)
}

// tracingCost is -tracing-cost: what tracing adds to the turn process's
// own CPU (issue 25's bar: within +10 %). o.runs pairs of turn processes,
// each pair one with tracing off and one with every turn traced
// (turnproc -otlp: the spans of each turn exported, the provider flushed
// after each request as each invocation's is), the pair's order
// alternating; each pair's CPU ratio, their median, and the medians of
// each side as one JSON line on stdout (and in -json). A pair runs back
// to back, so the machine's drift touches both sides of a ratio alike.
func tracingCost(ctx context.Context, o options, model *script.Server, llmURL string) error {
	sink := &otlpSink{}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: sink, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	defer srv.Close()
	traced := []string{"-otlp", "http://" + ln.Addr().String() + "/v1/traces"}

	var offCPU, onCPU, ratios, offDDB, onDDB []float64
	for i := range o.runs {
		var off, on sideRun
		for j, tracedFirst := 0, i%2 == 1; j < 2; j++ {
			var err error
			if (j == 0) == tracedFirst {
				exports := sink.exports.Load()
				if on, err = runOurs(ctx, o, i+1, model, llmURL, traced...); err == nil && sink.exports.Load() == exports {
					err = fmt.Errorf("no spans reached the collector")
				}
			} else {
				off, err = runOurs(ctx, o, i+1, model, llmURL)
			}
			if err != nil {
				return fmt.Errorf("pair %d: %w", i+1, err)
			}
		}
		logf("pair %d: off %s", i+1, off)
		logf("pair %d: on  %s", i+1, on)
		offCPU, onCPU = append(offCPU, off.cpuMs), append(onCPU, on.cpuMs)
		ratios = append(ratios, on.cpuMs/off.cpuMs)
		offDDB = append(offDDB, float64(off.ddb.Total())/float64(off.turns))
		onDDB = append(onDDB, float64(on.ddb.Total())/float64(on.turns))
	}
	out := map[string]any{
		"offCpuMsPerTurn": median(offCPU), "onCpuMsPerTurn": median(onCPU),
		"pairedRatioMedian": median(ratios), "pairedRatios": ratios,
		"offDynamoDBCallsPerTurn": median(offDDB), "onDynamoDBCallsPerTurn": median(onDDB),
		"otlpBytesPerExport": float64(sink.bytes.Load()) / float64(max(1, sink.exports.Load())),
	}
	b, err := json.Marshal(out)
	if err != nil {
		return err
	}
	fmt.Println(string(b))
	if o.jsonOut != "" {
		return os.WriteFile(o.jsonOut, append(b, '\n'), 0o644)
	}
	return nil
}
