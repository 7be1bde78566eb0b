package handler_test

import (
	"context"
	"testing"

	"github.com/commonly/runtime/shared/store"
	"github.com/commonly/runtime/shared/tablekeys"
)

// The function as deployed writes the usage report's digest: a finished
// native turn, through the stream event's translation and the ledger,
// lands on the reportDays index as one turn with its cost, engine and
// tokens.
func TestTurnReachesTheReportIndex(t *testing.T) {
	hs := newHarness(t, nil)
	if f := failures(hs.invoke("native-turn.json")); len(f) != 0 {
		t.Fatalf("failures %v", f)
	}
	var got []store.UserDay
	err := hs.store.ReportShard(context.Background(), day1, tablekeys.ReportShard("alice"), func(u store.UserDay) error {
		got = append(got, u)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].UserID != "alice" {
		t.Fatalf("index holds %+v, want alice's day", got)
	}
	d := got[0].Digest
	if d.Turns != 1 || d.CostMicros != alice1Final || d.ByEngine["native"].Turns != 1 || d.OpenMicros != 0 {
		t.Errorf("digest %+v, want one native turn of %d", d, alice1Final)
	}
	if d.TokensIn == 0 || d.MaxDurationMs == 0 || d.ModelMicros+d.SearchMicros+d.SandboxMicros != d.CostMicros {
		t.Errorf("digest tokens %d, max duration %d ms, parts %d+%d+%d of %d", d.TokensIn, d.MaxDurationMs, d.ModelMicros, d.SearchMicros, d.SandboxMicros, d.CostMicros)
	}
}
