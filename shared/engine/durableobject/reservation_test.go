package durableobject_test

import (
	"context"
	"encoding/json"
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
	var got []map[string]any
	for _, turn := range r.rt.Turns() {
		var body map[string]any
		if err := json.Unmarshal(turn.Raw, &body); err != nil {
			t.Fatal(err)
		}
		got = append(got, body)
	}
	if len(got) != 2 {
		t.Fatalf("%d requests", len(got))
	}
	if _, ok := got[0]["maxCostMicros"]; ok {
		t.Errorf("without a cap: %v", got[0])
	}
	if got[1]["maxCostMicros"] != 6_310.0 {
		t.Errorf("with a reservation: %v", got[1])
	}
}
