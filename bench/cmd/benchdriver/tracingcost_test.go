package main

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/commonly/runtime/bench/internal/script"
)

// -tracing-cost drives a real turn process (bench/cmd/turnproc) both ways:
// off, and with every turn's spans exported to the driver's collector,
// the same DynamoDB calls either way.
func TestTracingCostMeasuresBothSides(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "turnproc")
	build := exec.Command("go", "build", "-o", bin, "github.com/commonly/runtime/bench/cmd/turnproc")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build turnproc: %v\n%s", err, out)
	}
	o := options{runs: 2, turns: 3, warmup: 1, turnproc: bin, jsonOut: filepath.Join(dir, "cost.json"), traceRatio: 1}
	if err := withModel(func(model *script.Server, llmURL string) error {
		return tracingCost(context.Background(), o, model, llmURL)
	}); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(o.jsonOut)
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		OffCPU            float64   `json:"offCpuMsPerTurn"`
		OnCPU             float64   `json:"onCpuMsPerTurn"`
		BlockRatios       []float64 `json:"blockRatios"`
		OffDDB            float64   `json:"offDynamoDBCallsPerTurn"`
		OnDDB             float64   `json:"onDynamoDBCallsPerTurn"`
		OTLPBytesPerBatch float64   `json:"otlpBytesPerExport"`
	}
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	if got.OffCPU <= 0 || got.OnCPU <= 0 || len(got.BlockRatios) != 2 {
		t.Errorf("CPU not measured: %s", b)
	}
	// 5, as before the journal: it rides on the checkpoints. A turn that
	// a busy machine stalls for a second also looks for a stop (a
	// GetItem), so a few tenths more are the machine's, not the turn's.
	if got.OffDDB < 5 || got.OffDDB >= 5.5 || got.OnDDB < 5 || got.OnDDB >= 5.5 {
		t.Errorf("DynamoDB calls a turn: off %v, on %v, want 5 both", got.OffDDB, got.OnDDB)
	}
	// A turn's spans, one export a request (~6.9 KB for the scripted turn).
	if got.OTLPBytesPerBatch < 1000 {
		t.Errorf("%v bytes an export", got.OTLPBytesPerBatch)
	}
}
