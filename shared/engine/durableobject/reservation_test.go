package durableobject_test

import (
	"context"
	"testing"

	"github.com/commonly/runtime/shared/money"
	"github.com/commonly/runtime/shared/turns"
)

// Under a spend cap the runtime is told the turn's reservation as
// maxCostMicros, the most it may spend; without one nothing is added.
func TestRequestCarriesTheReservation(t *testing.T) {
	r := newRig(t, nil)
	for _, reserved := range []money.Micros{0, 6_310} {
		run := newRun()
		run.ReservedMicros = reserved
		r.engine.Run(context.Background(), turns.EngineTurn{Install: &turns.Install{InstallID: "inst-1"}, Run: run})
	}
	got := r.rt.Turns()
	if len(got) != 2 {
		t.Fatalf("%d requests", len(got))
	}
	if _, ok := got[0].Fields["maxCostMicros"]; ok || got[0].MaxCostMicros != 0 {
		t.Errorf("without a cap: %v", got[0].Fields)
	}
	if got[1].MaxCostMicros != 6_310 || got[1].Fields["maxCostMicros"] != "6310" {
		t.Errorf("with a reservation: %v", got[1].Fields)
	}
}
