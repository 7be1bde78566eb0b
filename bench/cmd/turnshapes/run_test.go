package main

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/commonly/runtime/bench/internal/shapes"
)

// build compiles a command of this module into dir.
func build(t *testing.T, dir, pkg string) string {
	t.Helper()
	out := filepath.Join(dir, filepath.Base(pkg))
	cmd := exec.Command("go", "build", "-o", out, pkg)
	cmd.Dir = "../../.."
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build %s: %v\n%s", pkg, err, b)
	}
	return out
}

// The driver runs watched turns of two shapes through the two processes,
// the model paced fast: every turn follows its shape, every poll reads
// at least a unit, the stream carries the run's events to run.finished,
// and the watch file it writes is one the scale model accepts.
func TestWatchedTurnsThroughBothProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the turn and events processes")
	}
	dir := t.TempDir()
	code, _ := shapes.ByName("code")
	o := options{
		turnproc: build(t, dir, "./bench/cmd/turnproc"), eventsproc: build(t, dir, "./bench/cmd/eventsproc"),
		shapes: []shapes.Shape{shapes.All[0], code}, rounds: 2, warmup: 0, cold: 1,
		ttft: 50 * time.Millisecond, interval: time.Millisecond,
		jsonOut: filepath.Join(dir, "out.json"), watchOut: filepath.Join(dir, "watch.json"),
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := run(ctx, o); err != nil {
		t.Fatal(err)
	}
	var r results
	b, err := os.ReadFile(o.jsonOut)
	if err != nil || json.Unmarshal(b, &r) != nil || len(r.Shapes) != 2 {
		t.Fatalf("results %s: %v", b, err)
	}
	for _, s := range r.Shapes {
		if s.Turns != 2 || len(s.Samples) != 2 {
			t.Errorf("%s: %d turns", s.Name, s.Turns)
		}
		for _, smp := range s.Samples {
			if smp.Polls < 1 || smp.ReadUnits < int64(smp.Polls) || smp.MaxItem <= 0 || smp.Events < 3 || smp.TurnCPUMs <= 0 || smp.EventsCPUMs <= 0 {
				t.Errorf("%s: %+v", s.Name, smp)
			}
		}
	}
	if len(r.EventsColdMs) != 1 || r.EventsColdMs[0] <= 0 {
		t.Errorf("cold starts %v", r.EventsColdMs)
	}
	var w struct {
		Source string `json:"source"`
		Shapes []struct {
			ReadUnitsPerPoll float64 `json:"readUnitsPerPoll"`
			Events           float64 `json:"events"`
		} `json:"shapes"`
	}
	b, err = os.ReadFile(o.watchOut)
	if err != nil || json.Unmarshal(b, &w) != nil || w.Source == "" || len(w.Shapes) != 2 || w.Shapes[1].ReadUnitsPerPoll < 1 || w.Shapes[1].Events <= 0 {
		t.Errorf("watch file %s: %v", b, err)
	}
}
