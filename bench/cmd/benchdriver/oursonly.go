package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"

	"github.com/commonly/runtime/bench/internal/script"
)

// oursOnly is -ours-only (the memory-size measurement, bench/memsize.sh):
// our turn process alone, o.runs times, then the cold starts, without the
// floor, the peer or the table; the medians as one JSON line on stdout
// (and in -json). The CPU a process may use is set around it (a cgroup),
// not here.
func oursOnly(ctx context.Context, o options, model *script.Server, llmURL string) error {
	var ours []sideRun
	for i := range o.runs {
		r, err := runOurs(ctx, o, i+1, model, llmURL)
		if err != nil {
			return fmt.Errorf("ours, run %d: %w", i+1, err)
		}
		logf("ours  run %d: %s", i+1, r)
		ours = append(ours, r)
	}
	var cold cold
	if o.coldStarts > 0 {
		var err error
		if cold, err = coldStarts(ctx, o); err != nil {
			return fmt.Errorf("cold start: %w", err)
		}
	}
	var wall, cpu []float64
	for _, r := range ours {
		wall, cpu = append(wall, r.wallMs), append(cpu, r.cpuMs)
	}
	out := map[string]float64{
		"wallMsPerTurn": median(wall), "cpuMsPerTurn": median(cpu),
		"coldRieMs": median(cold.rieMs), "coldAloneMs": median(cold.aloneMs), "coldAloneCpuMs": median(cold.aloneCPUMs),
	}
	return printJSON(o, out)
}

// printJSON prints v as one JSON line, and writes it to -json when set.
func printJSON(o options, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	fmt.Println(string(b))
	if o.jsonOut != "" {
		return os.WriteFile(o.jsonOut, append(b, '\n'), 0o644)
	}
	return nil
}
