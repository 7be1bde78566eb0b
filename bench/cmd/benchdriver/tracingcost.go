package main

import (
	"context"
	"fmt"
	"strconv"

	"github.com/commonly/runtime/bench/internal/otlpsink"
	"github.com/commonly/runtime/bench/internal/script"
)

// tracingCost is -tracing-cost: what tracing adds to the turn process's
// own CPU (issue 25's bar: within +10 %). o.runs pairs of turn processes,
// each pair one with tracing off and one with every turn traced
// (turnproc -otlp: the spans of each turn exported, the provider flushed
// after each request as each invocation's is), the pair's order
// alternating; each pair's CPU ratio, their median, and the medians of
// each side as one JSON line on stdout (and in -json). A pair runs back
// to back, so the machine's drift touches both sides of a ratio alike.
func tracingCost(ctx context.Context, o options, model *script.Server, llmURL string) error {
	// The collector runs here, so its work is not in the turn process's
	// CPU: in AWS the collector is X-Ray's.
	sink := &otlpsink.Sink{}
	addr, stop, err := serveLoopback(sink)
	if err != nil {
		return err
	}
	defer stop()
	traced := []string{"-otlp", "http://" + addr + "/v1/traces", "-trace-ratio", strconv.FormatFloat(o.traceRatio, 'g', -1, 64)}

	var offCPU, onCPU, ratios, offDDB, onDDB []float64
	for i := range o.runs {
		var off, on sideRun
		for j, tracedFirst := 0, i%2 == 1; j < 2; j++ {
			var err error
			if (j == 0) == tracedFirst {
				exports := sink.Exports()
				if on, err = runOurs(ctx, o, i+1, model, llmURL, traced...); err == nil && o.traceRatio == 1 && sink.Exports() == exports {
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
		"otlpBytesPerExport": sink.BytesPerExport(), "traceRatio": o.traceRatio,
	}
	return printJSON(o, out)
}
