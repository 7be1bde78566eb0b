package usage_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/commonly/runtime/infra/report/usage"
	"github.com/commonly/runtime/shared/ledger"
	"github.com/commonly/runtime/shared/store"
)

// Against the ceiling: the user-days that used every turn, how far under
// it the rest stayed, and how many would reach other ceilings (a lower
// bound above the current one).
func TestCeilingFigures(t *testing.T) {
	b := usage.NewBuilder(reportConfig("2026-10-03", t.TempDir()+"/index.html")) // free=4
	for i, turns := range []int64{4, 4, 1, 2, 3} {
		b.Add(store.UserDay{UserID: string(rune('a' + i)), Day: "2026-10-03", Digest: ledger.Digest{Turns: turns, ByPlan: map[string]int64{"free": turns}}})
	}
	// A refunded turn is not charged against the ceiling.
	b.Add(store.UserDay{UserID: "f", Day: "2026-10-03", Digest: ledger.Digest{Turns: 5, Refunded: 2, ByPlan: map[string]int64{"free": 5}}})
	r := b.Report()
	if len(r.Ceilings) != 1 {
		t.Fatalf("ceilings %+v", r.Ceilings)
	}
	c := r.Ceilings[0]
	// Charged: 4, 4, 1, 2, 3, 3. At the ceiling: 2; the rest 1, 2, 3, 3: median 2, p90 3.
	if c.Limit != 4 || c.UserDays != 6 || c.AtCeiling != 2 || c.HeadroomP50 != 2 || c.HeadroomP90 != 1 {
		t.Errorf("ceiling %+v", c)
	}
	want := map[int64]usage.Reach{5: {5, 0, true}, 10: {10, 0, true}, 30: {30, 0, true}}
	for _, w := range c.WouldReach {
		if x, ok := want[w.Ceiling]; ok && w != x {
			t.Errorf("would reach %d: %+v, want %+v", w.Ceiling, w, x)
		}
	}
	if c.Counts[4] != 2 || c.Counts[3] != 2 || c.Counts[0] != 0 {
		t.Errorf("counts %v", c.Counts)
	}
}

// A period without a single user-day still renders: the page says so
// rather than failing.
func TestEmptyReportRenders(t *testing.T) {
	r := usage.NewBuilder(reportConfig("2026-10-03", t.TempDir()+"/index.html")).Report()
	var page bytes.Buffer
	if err := r.HTML(&page); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(page.String(), "0 user-days, 0 finished turns") || !strings.Contains(page.String(), "no data") {
		t.Errorf("empty page:\n%s", page.String())
	}
}
