package ledger

import (
	"errors"
	"strconv"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/commonly/runtime/shared/money"
)

func TestApply(t *testing.T) {
	const threshold = 100
	book := func(total money.Micros, runs map[string]Counted) Book {
		return Book{Rev: 3, CostMicros: total, Runs: runs}
	}
	cases := []struct {
		name      string
		book      Book
		sightings []sighting
		total     money.Micros
		delta     money.Micros
		changed   bool
		crossing  string
	}{
		{"new run", book(0, nil), []sighting{{seq: "10", runID: "r1", cost: 30}}, 30, 30, true, ""},
		{"checkpoints: the last image counts", book(0, nil),
			[]sighting{{seq: "10", runID: "r1", cost: 0}, {seq: "11", runID: "r1", cost: 20}, {seq: "12", runID: "r1", cost: 45}}, 45, 45, true, ""},
		{"redelivery changes nothing", book(45, map[string]Counted{"r1": {45, "12", nil}}),
			[]sighting{{seq: "10", runID: "r1", cost: 0}, {seq: "11", runID: "r1", cost: 20}, {seq: "12", runID: "r1", cost: 45}}, 45, 0, false, ""},
		{"a stale record is ignored", book(45, map[string]Counted{"r1": {45, "12", nil}}), []sighting{{seq: "11", runID: "r1", cost: 20}}, 45, 0, false, ""},
		{"stale by number, not by string", book(45, map[string]Counted{"r1": {45, "100", nil}}), []sighting{{seq: "99", runID: "r1", cost: 20}}, 45, 0, false, ""},
		{"newer by number, not by string", book(45, map[string]Counted{"r1": {45, "99", nil}}), []sighting{{seq: "100", runID: "r1", cost: 50}}, 50, 5, true, ""},
		{"a correction adds the difference", book(45, map[string]Counted{"r1": {45, "12", nil}}), []sighting{{seq: "13", runID: "r1", cost: 40}}, 40, -5, true, ""},
		{"same cost, newer record: no write", book(45, map[string]Counted{"r1": {45, "12", nil}}), []sighting{{seq: "13", runID: "r1", cost: 45}}, 45, 0, false, ""},
		{"a zero-cost run is not booked", book(0, nil), []sighting{{seq: "10", runID: "r1", cost: 0}}, 0, 0, false, ""},
		{"a finished zero-cost run is booked: a turn for the report", book(0, nil), []sighting{{seq: "10", runID: "r1", cost: 0, facts: &Facts{Kind: "config"}}}, 0, 0, true, ""},
		{"same cost, the run finished: its facts are written", book(45, map[string]Counted{"r1": {45, "12", nil}}), []sighting{{seq: "13", runID: "r1", cost: 45, facts: &Facts{Engine: "native"}}}, 45, 0, true, ""},
		{"a finished run redelivered: no write", book(45, map[string]Counted{"r1": {45, "12", &Facts{Engine: "native"}}}), []sighting{{seq: "13", runID: "r1", cost: 45, facts: &Facts{Engine: "native"}}}, 45, 0, false, ""},
		{"crossed inside the batch", book(90, map[string]Counted{"r0": {90, "5", nil}}),
			[]sighting{{seq: "10", runID: "r1", cost: 5}, {seq: "11", runID: "r1", cost: 15}, {seq: "12", runID: "r2", cost: 1}}, 106, 16, true, "11"},
		{"already over: the first record", book(150, map[string]Counted{"r0": {150, "5", nil}}), []sighting{{seq: "10", runID: "r1", cost: 5}, {seq: "11", runID: "r2", cost: 5}}, 160, 10, true, "10"},
		{"over only after a dip: the last crossing", book(90, map[string]Counted{"r0": {90, "5", nil}}),
			[]sighting{{seq: "10", runID: "r1", cost: 20}, {seq: "11", runID: "r0", cost: 60}, {seq: "12", runID: "r2", cost: 30}}, 110, 20, true, "12"},
		{"ends below: no crossing", book(90, map[string]Counted{"r0": {90, "5", nil}}),
			[]sighting{{seq: "10", runID: "r1", cost: 20}, {seq: "11", runID: "r0", cost: 60}}, 80, -10, true, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			before := len(c.book.Runs)
			a := apply(c.book, c.sightings, threshold)
			if a.next.CostMicros != c.total || a.delta != c.delta || a.changed != c.changed || a.crossing != c.crossing {
				t.Errorf("total %d delta %d changed %v crossing %q; want %d %d %v %q", a.next.CostMicros, a.delta, a.changed, a.crossing, c.total, c.delta, c.changed, c.crossing)
			}
			var sum money.Micros
			for _, r := range a.next.Runs {
				sum += r.CostMicros
			}
			if sum != a.next.CostMicros {
				t.Errorf("runs sum to %d, total %d", sum, a.next.CostMicros)
			}
			if a.next.Rev != c.book.Rev || len(c.book.Runs) != before {
				t.Errorf("the book as read was changed")
			}
		})
	}
}

func TestFold(t *testing.T) {
	img := func(run, user, day string, cost int) map[string]types.AttributeValue {
		return map[string]types.AttributeValue{
			"runId": &types.AttributeValueMemberS{Value: run}, "userId": &types.AttributeValueMemberS{Value: user},
			"day": &types.AttributeValueMemberS{Value: day}, "engine": &types.AttributeValueMemberS{Value: "native"},
			"costMicros": &types.AttributeValueMemberN{Value: strconv.Itoa(cost)},
		}
	}
	records := []Record{
		{Seq: "1", Op: Insert, New: img("r1", "u1", "2026-12-02", 0)},
		{Seq: "2", Op: Insert, New: img("r2", "u2", "2026-12-02", 0)},
		{Seq: "3", Op: Modify, New: img("r1", "u1", "2026-12-02", 10), Old: img("r1", "u1", "2026-12-02", 0)},
		{Seq: "4", Op: Remove, Old: img("r0", "u1", "2026-12-01", 7)},
		{Seq: "5", Op: Modify, New: map[string]types.AttributeValue{"runId": &types.AttributeValueMemberS{Value: "r3"}}},
		{Seq: "6", Op: Modify, New: img("r1", "u1", "2026-12-03", 10), Old: img("r1", "u1", "2026-12-02", 10)},
		{Seq: "x7", Op: Insert, New: img("r4", "u1", "2026-12-02", 1)},
	}
	days, removes, skipped := fold(records)
	if removes != 1 || len(skipped) != 2 || skipped[0].RunID != "r3" || skipped[1].Seq != "x7" {
		t.Fatalf("removes %d, skipped %+v", removes, skipped)
	}
	for _, sk := range skipped {
		if !errors.Is(sk.Err, ErrMalformed) {
			t.Errorf("skip %s: %v", sk.Seq, sk.Err)
		}
	}
	want := []struct {
		key   DayKey
		first string
		seqs  string
	}{
		{DayKey{"u1", "2026-12-02"}, "1", "1,3,6"},
		{DayKey{"u2", "2026-12-02"}, "2", "2"},
		{DayKey{"u1", "2026-12-03"}, "6", "6"},
	}
	if len(days) != len(want) {
		t.Fatalf("%d days, want %d", len(days), len(want))
	}
	for i, w := range want {
		seqs := ""
		for j, s := range days[i].sightings {
			if j > 0 {
				seqs += ","
			}
			seqs += s.seq
		}
		if days[i].key != w.key || days[i].first != w.first || seqs != w.seqs {
			t.Errorf("day %d: %v first %s seqs %s; want %v %s %s", i, days[i].key, days[i].first, seqs, w.key, w.first, w.seqs)
		}
	}
	// The run moved to the 3rd leaves the 2nd with cost 0.
	if last := days[0].sightings[2]; last.runID != "r1" || last.cost != 0 {
		t.Errorf("move: %+v", last)
	}
}
