package ledger

import (
	"fmt"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/commonly/runtime/shared/money"
)

// Op is what a stream record says happened to a run's item.
type Op string

// The stream's event names.
const (
	Insert Op = "INSERT"
	Modify Op = "MODIFY"
	Remove Op = "REMOVE"
)

// Record is one record of the runs table's stream (NEW_AND_OLD_IMAGES),
// translated from the Lambda event by the handler. Images may hold only
// ImageAttributes, and a finished run's New image FinishedImageAttributes.
type Record struct {
	// Seq is the record's SequenceNumber, the key of a batch item failure.
	Seq string
	Op  Op
	New map[string]types.AttributeValue
	Old map[string]types.AttributeValue
}

// DayKey names a user's UTC day.
type DayKey struct {
	UserID string
	Day    string
}

// sighting is one record's word on a run's cost within one user-day.
type sighting struct {
	seq    string
	runID  string
	engine string
	cost   money.Micros
	// facts are the run's when the record is of a finished run.
	facts *Facts
}

// dayRecords is a user-day's sightings in shard order.
type dayRecords struct {
	key DayKey
	// first is the sequence number of the day's first record in the batch:
	// a retry from it brings back every record the day was folded from.
	first     string
	sightings []sighting
}

// Skip is a record the ledger did not count, and why.
type Skip struct {
	Seq   string
	RunID string
	Err   error
}

// fold groups a batch's records by user-day, in shard order. REMOVE
// records (TTL deletions, an operator's delete) are left out: deleting a
// run never changes a day's total. A record whose new image cannot be
// counted is skipped. A record that moves a run to another user or day
// (an operator's fix) is also a sighting of cost 0 on the day it leaves.
func fold(records []Record) (days []*dayRecords, removes int, skipped []Skip) {
	byKey := map[DayKey]*dayRecords{}
	add := func(k DayKey, s sighting) {
		d := byKey[k]
		if d == nil {
			d = &dayRecords{key: k, first: s.seq}
			byKey[k] = d
			days = append(days, d)
		}
		d.sightings = append(d.sightings, s)
	}
	for _, r := range records {
		if r.Op == Remove {
			removes++
			continue
		}
		im, err := DecodeImage(r.New)
		if err == nil && r.Op != Insert && r.Op != Modify {
			err = fmt.Errorf("%w: event %q", ErrMalformed, r.Op)
		}
		if err == nil && !validSeq(r.Seq) {
			err = fmt.Errorf("%w: sequence number %q", ErrMalformed, r.Seq)
		}
		if err != nil {
			skipped = append(skipped, Skip{Seq: r.Seq, RunID: im.RunID, Err: err})
			continue
		}
		k := DayKey{UserID: im.UserID, Day: im.Day}
		if old, err := DecodeImage(r.Old); err == nil && old.RunID == im.RunID {
			if from := (DayKey{UserID: old.UserID, Day: old.Day}); from != k {
				add(from, sighting{seq: r.Seq, runID: im.RunID, engine: im.Engine})
			}
		}
		add(k, sighting{seq: r.Seq, runID: im.RunID, engine: im.Engine, cost: im.CostMicros, facts: decodeFacts(r.New)})
	}
	return days, removes, skipped
}
