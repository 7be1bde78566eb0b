package main

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

func TestParseBenchstatCSV(t *testing.T) {
	out := []byte(`goos: linux
,go.txt,
,sec/op,CI
Turn/api-2,0.003762824,2%
Turn/handler-2,0.0031670830000000002,∞
geomean,0.0033223100123446433,

,go.txt,
,ddb-calls/op,CI
Turn/api-2,6,∞
Turn/handler-2,7,∞
geomean,6.5,
`)
	g, err := parseBenchstatCSV(out)
	if err != nil {
		t.Fatal(err)
	}
	if v, ok := g.get("Turn/api", "sec/op"); !ok || v != 0.003762824 {
		t.Errorf("sec/op = %v %v", v, ok)
	}
	if v, ok := g.get("Turn/handler", "ddb-calls/op"); !ok || v != 7 {
		t.Errorf("ddb-calls/op = %v %v", v, ok)
	}
	if _, ok := g.get("geomean", "sec/op"); ok {
		t.Error("geomean read as a benchmark")
	}
	if _, err := parseBenchstatCSV([]byte("nothing\n")); err == nil {
		t.Error("no benchmarks: no error")
	}
}

func TestMedian(t *testing.T) {
	for _, c := range []struct {
		in   []float64
		want float64
	}{{[]float64{3, 1, 2}, 2}, {[]float64{4, 1, 3, 2}, 2.5}, {[]float64{5}, 5}, {nil, 0}} {
		if got := median(c.in); got != c.want {
			t.Errorf("median(%v) = %v, want %v", c.in, got, c.want)
		}
	}
}

func TestFloorVerdict(t *testing.T) {
	if got := floorVerdict(1.2, 0.7); !strings.Contains(got, "no turn making these calls over HTTP meets it") {
		t.Errorf("floor above the budget: %q", got)
	}
	if got := floorVerdict(0.5, 0.7); !strings.Contains(got, "0.200 ms of the 0.700 ms") {
		t.Errorf("floor below the budget: %q", got)
	}
}

func TestPairRatios(t *testing.T) {
	ours := []sideRun{{cpuMs: 2}, {cpuMs: 4}, {cpuMs: 1}}
	peer := []sideRun{{cpuMs: 6}, {cpuMs: 8}}
	got := pairRatios(ours, peer)
	if len(got) != 2 || got[0] != 3 || got[1] != 2 {
		t.Errorf("pairRatios = %v, want [3 2]", got)
	}
}

func TestColdProcStopsAndTellsItsOutput(t *testing.T) {
	ctx := context.Background()
	p, err := startCold(ctx, nil, "sleep", "30")
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	p.stop()
	if time.Since(start) > 5*time.Second || p.cmd.ProcessState == nil || p.cmd.ProcessState.Success() {
		t.Errorf("not killed: %v", p.cmd.ProcessState)
	}

	if p, err = startCold(ctx, []string{"GREETING=hello"}, "/bin/sh", "-c", `echo "$GREETING" >&2; exit 3`); err != nil {
		t.Fatal(err)
	}
	_ = p.cmd.Wait() // its output is all in
	if err := p.fail(errors.New("boom")); err.Error() != "boom\nhello\n" {
		t.Errorf("fail: %q", err)
	}
}
