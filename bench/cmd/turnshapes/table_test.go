package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/commonly/runtime/bench/internal/shapes"
)

func TestQuantile(t *testing.T) {
	s := []float64{1, 2, 3, 4, 5}
	for q, want := range map[float64]float64{0: 1, 0.5: 3, 0.95: 4.8, 1: 5} {
		if got := quantile(s, q); got != want {
			t.Errorf("quantile(%g) = %g, want %g", q, got, want)
		}
	}
	if quantile(nil, 0.5) != 0 {
		t.Error("the quantile of nothing")
	}
}

// writeRun writes a run of the answer and context-50k shapes at mb whose
// own time is own ms for every turn.
func writeRun(t *testing.T, dir string, mb int, pass string, own float64) {
	t.Helper()
	r := results{Label: "x", Date: "2026-12-05", TTFTMs: 1000, IntervalMs: 12, EventsColdMs: []float64{50, 60}}
	for _, name := range []string{"answer", "context-50k"} {
		s, _ := shapes.ByName(name)
		var ts []turnSample
		for range 4 {
			ts = append(ts, turnSample{TurnCPUMs: 100, WallMs: 7000 + own, ModelMs: 7000, OwnMs: own, EventsCPUMs: 40, Polls: 30, ReadUnits: 60, ItemBytes: 30 * 5000, MaxItem: 9000, ProcessUs: []int64{300, 400}, Events: 20, StreamBytes: 9000, StreamMs: 7300})
		}
		r.Shapes = append(r.Shapes, summarize(s, ts))
	}
	b, _ := json.Marshal(r)
	if err := os.WriteFile(filepath.Join(dir, "shapes-"+itoa(mb)+"-"+pass+".json"), b, 0o644); err != nil {
		t.Fatal(err)
	}
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

// The size chosen is the smallest that adds at most 1 % of a turn's wall
// with the model's latency (6 s a call: 60 ms for the one-call answer)
// at p95, whatever the order of the sizes' files.
func TestTablesChooseTheSmallestSizeWithinOnePercent(t *testing.T) {
	dir := t.TempDir()
	scaleDir := t.TempDir()
	if err := os.WriteFile(filepath.Join(scaleDir, "inputs.json"), []byte(`{"turn":{"modelSecondsPerCall":6,"codeRunSeconds":2}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, pass := range []string{"1", "2"} {
		writeRun(t, dir, 0, pass, 10)
		writeRun(t, dir, 128, pass, 200) // +190 ms: over 60
		writeRun(t, dir, 256, pass, 65)  // +55 ms: within 60 for the answer, 120 for context
		writeRun(t, dir, 512, pass, 20)
	}
	var out bytes.Buffer
	if err := printTables(&out, dir, scaleDir); err != nil {
		t.Fatal(err)
	}
	text := out.String()
	if !strings.Contains(text, "the turn function 256 MB") {
		t.Errorf("did not choose 256 MB:\n%s", text)
	}
	if !strings.Contains(text, "| 128 | +190.0 (3.17 %)") {
		t.Errorf("128 MB's added time and share:\n%s", text)
	}
	if !strings.Contains(text, "2 pass(es)") {
		t.Errorf("the passes are not pooled:\n%s", text)
	}
}

// Without a run at no quota there is nothing to measure against.
func TestTablesNeedTheReference(t *testing.T) {
	dir, scaleDir := t.TempDir(), t.TempDir()
	_ = os.WriteFile(filepath.Join(scaleDir, "inputs.json"), []byte(`{"turn":{"modelSecondsPerCall":6}}`), 0o644)
	writeRun(t, dir, 128, "1", 100)
	if err := printTables(&bytes.Buffer{}, dir, scaleDir); err == nil {
		t.Error("tables without the reference run")
	}
}
