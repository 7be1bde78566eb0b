package ledger

import (
	"context"
	"errors"
	"time"

	"github.com/commonly/runtime/shared/money"
)

// ErrConflict reports that a user-day's ledger changed since it was read
// (another shard's batch counted a run of the same day) or that a write
// met a concurrent transaction on the day's items. The ledger reads the
// day again and retries.
var ErrConflict = errors.New("ledger: user-day written concurrently")

// Counted is what a user-day's ledger has counted of one run: its cost as
// of the stream record with sequence number Seq.
type Counted struct {
	CostMicros money.Micros `dynamodbav:"c"`
	Seq        string       `dynamodbav:"s"`
	// Facts are the run's, once a finished record of it is counted, for
	// the usage report's digest (nil while the run is open).
	Facts *Facts `dynamodbav:"f,omitempty"`
}

// Book is a user-day's ledger item: the runs it has counted and their sum.
// Rev counts its writes (0: no item yet); each write is conditional on the
// revision it read, so two writers never both apply a delta computed from
// the same state.
type Book struct {
	Rev        int64
	CostMicros money.Micros
	Runs       map[string]Counted
}

// Day is a user-day as read: the ledger item and, from the usage item
// beside it, the turns counted by the turn function and the alarm marker.
type Day struct {
	Book    Book
	Turns   int64
	AlarmID string
}

// Write is one user-day's change: the book as read (From.Rev is the
// condition), the book to write (the store writes DigestOf(Next) with it),
// and the delta to add to the usage item's cost in the same transaction.
type Write struct {
	Key   DayKey
	From  int64
	Next  Book
	Delta money.Micros
}

// Store keeps the ledgers and the usage items (DynamoDB: store.Dynamo).
type Store interface {
	// ReadDays reads the user-days, consistently. A day without items is
	// the zero Day.
	ReadDays(ctx context.Context, days []DayKey) (map[DayKey]Day, error)
	// WriteDay writes w.Next if the ledger is still at revision w.From and
	// adds w.Delta to the usage item's cost, atomically; ErrConflict if
	// the ledger moved or a concurrent transaction got in the way.
	WriteDay(ctx context.Context, w Write) error
	// MarkAlarm records on the usage item that alarm id was raised,
	// unless the marker changed from prev (as read). It reports whether
	// this call set it; false means another writer had.
	MarkAlarm(ctx context.Context, key DayKey, id, prev string, at time.Time) (bool, error)
}
