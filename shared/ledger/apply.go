package ledger

import (
	"maps"

	"github.com/commonly/runtime/shared/money"
)

// applied is a user-day's sightings counted on its book as read.
type applied struct {
	next  Book
	delta money.Micros
	// changed says whether a run's counted cost changed, so the book and
	// the usage must be written; a batch of redeliveries changes nothing
	// and costs no write.
	changed bool
	// crossing is the sighting after which the day's total reached the
	// threshold and stayed there to the end of the batch ("" if it ends
	// below): the record to report when the alarm cannot be raised.
	crossing string
}

// apply counts a user-day's sightings, in shard order, on the book as
// read. A sighting no newer than what the book counted of its run (a
// redelivery, a stale record) changes nothing; a newer one makes its cost
// the run's counted cost and adds the difference, which may be negative,
// to the total. next.Rev is left as read.
func apply(b Book, ss []sighting, threshold money.Micros) applied {
	a := applied{next: Book{Rev: b.Rev, CostMicros: b.CostMicros, Runs: maps.Clone(b.Runs)}}
	if a.next.Runs == nil {
		a.next.Runs = map[string]Counted{}
	}
	for _, s := range ss {
		c, counted := a.next.Runs[s.runID]
		switch {
		case counted && !seqAfter(s.seq, c.Seq):
			// Already counted as of this record or a later one.
		case !counted && s.cost == 0 && s.facts == nil:
			// Nothing to count; an absent open run counts 0. A finished
			// one is a turn for the report, whatever its cost.
		default:
			if s.cost != c.CostMicros {
				a.changed = true
				a.delta += s.cost - c.CostMicros
				a.next.CostMicros += s.cost - c.CostMicros
			}
			if !sameFacts(s.facts, c.Facts) {
				a.changed = true
			}
			a.next.Runs[s.runID] = Counted{CostMicros: s.cost, Seq: s.seq, Facts: s.facts}
		}
		if a.next.CostMicros < threshold {
			a.crossing = ""
		} else if a.crossing == "" {
			a.crossing = s.seq
		}
	}
	return a
}
