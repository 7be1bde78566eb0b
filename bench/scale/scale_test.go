package scale

import (
	"math"
	"os"
	"strings"
	"testing"

	"github.com/commonly/runtime/shared/tablekeys"
)

func load(t *testing.T) Model {
	t.Helper()
	m, err := Load(".", "../../cdk.json", tablekeys.DefaultIndexShards)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// docs/scale.md holds exactly what the model prints: `make scale`
// rewrites it, and this fails until it is rerun after a change of the
// inputs, the measured figures, cdk.json or the model.
func TestDocumentIsTheModelsOutput(t *testing.T) {
	m := load(t)
	doc, err := os.ReadFile("../../docs/scale.md")
	if err != nil {
		t.Fatal(err)
	}
	want, err := Splice(string(doc), m.Render())
	if err != nil {
		t.Fatal(err)
	}
	if string(doc) != want {
		t.Error("docs/scale.md differs from the model's output: run make scale")
	}
}

// The model's arithmetic at one size, by hand from the inputs: the load
// scales with the users, the cost a turn does not, and the busiest key
// is an open-index shard's share.
func TestComputeFollowsTheInputs(t *testing.T) {
	m := load(t)
	small, large := m.Compute(1e5), m.Compute(1e7)
	perUser := 0.0
	for _, p := range m.In.Plans {
		perUser += p.Share * p.TurnsPerUserDay
	}
	if want := 1e5 * perUser / 86400 * m.In.PeakFactor; math.Abs(small.PeakTurns-want) > 1e-9 {
		t.Errorf("peak turns %g, want %g", small.PeakTurns, want)
	}
	if r := large.PeakTurns / small.PeakTurns; math.Abs(r-100) > 1e-9 {
		t.Errorf("100× the users made %g× the turns", r)
	}
	if math.Abs(large.CostPerTurn-small.CostPerTurn) > 1e-7*small.CostPerTurn+1e-12 && large.CostPerTurn > small.CostPerTurn {
		t.Errorf("a turn costs more at 10 M (%g) than at 100 k (%g)", large.CostPerTurn, small.CostPerTurn)
	}
	open := large.IndexWrites["runs "+tablekeys.OpenIndex]
	if want := large.PeakTurns * m.Measured.WriteUnitsPerTurn["commonly-runs"]["index "+tablekeys.OpenIndex]; math.Abs(open-want) > 1e-6 {
		t.Errorf("open index %g write units/s, want %g", open, want)
	}
	// An index given in the inputs (the userRuns index) counts its
	// writes into the runs table's, once.
	user := m.In.IndexWrites["runs "+tablekeys.UserRunsIndex].PerTurn
	if user != 2 || math.Abs(large.IndexWrites["runs "+tablekeys.UserRunsIndex]-large.PeakTurns*user) > 1e-6 {
		t.Errorf("userRuns index %g write units/s from %g a turn", large.IndexWrites["runs "+tablekeys.UserRunsIndex], user)
	}
	runs := 0.0
	for _, v := range m.Measured.WriteUnitsPerTurn["commonly-runs"] {
		runs += v
	}
	if want := large.PeakTurns * (runs + user - m.Measured.WriteUnitsPerTurn["commonly-runs"]["index "+tablekeys.UserRunsIndex]); math.Abs(large.RunsWrites-want) > 1e-6 {
		t.Errorf("runs table %g write units/s, want %g", large.RunsWrites, want)
	}
	if large.BusiestWrites < open/float64(m.IndexShards)-1e-9 {
		t.Errorf("busiest key %g below an open shard's %g", large.BusiestWrites, open/float64(m.IndexShards))
	}
	sum := 0.0
	for _, k := range costParts {
		if large.Cost[k] <= 0 {
			t.Errorf("cost of %s is %g: never silently zero", k, large.Cost[k])
		}
		sum += large.Cost[k]
	}
	if math.Abs(sum-large.CostPerTurn) > 1e-12 {
		t.Errorf("parts %g, total %g", sum, large.CostPerTurn)
	}
	// At 10 million users the default shards keep the busiest key under a
	// partition's limit: the point of DefaultIndexShards.
	if large.BusiestWrites >= m.In.Limits["partitionWritesPerSecond"].Value {
		t.Errorf("busiest key %g write units/s at 10 M users", large.BusiestWrites)
	}
}

// Inputs the model cannot use are refused: a price without its source,
// plan shares that do not add up.
func TestLoadRefusesBadInputs(t *testing.T) {
	m := load(t)
	p := m.In.Prices["e2bSecond"]
	p.Source = ""
	m.In.Prices["e2bSecond"] = p
	if err := m.check(); err == nil || !strings.Contains(err.Error(), "e2bSecond") {
		t.Errorf("a price without its source: %v", err)
	}
	m = load(t)
	m.In.Plans[0].Share += 0.1
	if err := m.check(); err == nil {
		t.Error("plan shares of 1.1 accepted")
	}
}
