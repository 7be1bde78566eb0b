package main

import (
	"context"
	"fmt"
	"path/filepath"
	"strconv"

	"github.com/commonly/runtime/bench/internal/otlpsink"
	"github.com/commonly/runtime/bench/internal/script"
)

// tracingCost is -tracing-cost: what tracing adds to the turn process's
// own CPU (issue 25's bar: within +10 %). Two turn processes run side by
// side for the whole measurement, one with tracing off and one with every
// turn traced (turnproc -otlp: each request's spans exported after its
// response, the next request starting once they are out, as the traces
// extension does in Lambda; with -export-before-response before the
// response instead; with -trace-ratio only that share kept). After o.warmup turns each, they
// take turns in blocks of o.turns turns, o.runs blocks each, the order
// alternating, each block's CPU read from the process before and after
// it. Blocks a second or two long, back to back, see the same machine:
// its drift (neighbours on the host) moves both sides alike, which
// separate processes run one after the other did not. Prints, as one JSON
// line (and in -json), each side's CPU a turn over all its blocks, their
// ratio, and each block pair's ratio with their median. With -baseline
// the first side is that turn process, traced as the second: the ratio
// is what a change costs a traced turn (with -untraced, an untraced one).
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
	if o.exportBeforeResponse {
		traced = append(traced, "-export-before-response")
	}

	var sides [2]*side // off, on
	first, firstArgs := o, []string(nil)
	if o.baseline != "" {
		first.turnproc, firstArgs = o.baseline, traced
		if o.untraced {
			firstArgs, traced = nil, nil
		}
	}
	for i, args := range [][]string{firstArgs, traced} {
		if o.profileDir != "" {
			name := filepath.Join(o.profileDir, "turnproc-"+[]string{"off", "on"}[i])
			args = append(args, "-cpuprofile", name+".cpu", "-memprofile", name+".mem")
		}
		so := o
		if i == 0 {
			so = first
		}
		s, err := startSide(ctx, so, llmURL, args...)
		if err != nil {
			return err
		}
		defer s.close()
		if err := s.client.CreateInstall(ctx); err != nil {
			_, err = s.p.fail(err)
			return err
		}
		sides[i] = s
	}
	var cpu, ddb, rss [2]float64
	var ratios []float64
	for i := range o.runs {
		b := o // the first block warms each side up
		if i > 0 {
			b.warmup = 0
		}
		var r [2]sideRun
		for j := range 2 {
			k := j
			if i%2 == 1 {
				k = 1 - j
			}
			exports := sink.Exports()
			var err error
			if r[k], err = sides[k].p.measure(ctx, b, model, sides[k].turn(ctx)); err != nil {
				return fmt.Errorf("block %d: %w", i+1, err)
			}
			if (k == 1 || o.baseline != "") && !o.untraced && o.traceRatio == 1 && sink.Exports() == exports {
				return fmt.Errorf("block %d: no spans reached the collector", i+1)
			}
		}
		logf("block %d: off %s", i+1, r[0])
		logf("block %d: on  %s", i+1, r[1])
		for k := range 2 {
			cpu[k] += r[k].cpuMs
			ddb[k] += float64(r[k].ddb.Total()) / float64(r[k].turns)
			rss[k] = max(rss[k], r[k].peakRSSMiB)
		}
		ratios = append(ratios, r[1].cpuMs/r[0].cpuMs)
	}
	n := float64(o.runs)
	out := map[string]any{
		"offCpuMsPerTurn": cpu[0] / n, "onCpuMsPerTurn": cpu[1] / n, "ratio": cpu[1] / cpu[0],
		"blockRatioMedian": median(ratios), "blockRatios": ratios,
		"offDynamoDBCallsPerTurn": ddb[0] / n, "onDynamoDBCallsPerTurn": ddb[1] / n,
		"otlpBytesPerExport": sink.BytesPerExport(), "traceRatio": o.traceRatio, "exportBeforeResponse": o.exportBeforeResponse,
		"baseline": o.baseline, "offPeakRSSMiB": rss[0], "onPeakRSSMiB": rss[1],
	}
	return printJSON(o, out)
}
