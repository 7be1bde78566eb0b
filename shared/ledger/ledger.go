// Package ledger totals each user's cost per UTC day from the runs
// table's stream and raises the spend alarm.
//
// Exactly once under at-least-once delivery: each user-day has a ledger
// item (tablekeys.Ledger) that records, per run, the cost already counted and
// the stream record it came from. A batch's records are folded per
// user-day; each day is read once, the difference between every run's
// latest cost and its counted cost is added to the day's usage item
// (tablekeys.UsageOnDay, the item the admission counts turns on) in the same
// transaction that writes the ledger, conditional on the ledger as read.
// A redelivered record, a retried batch and a Lambda retry find their
// runs counted and change nothing; a corrected cost adds its difference;
// a run's cost counts on the day recorded on the run, whatever the time.
package ledger

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/commonly/runtime/shared/money"
	"github.com/commonly/runtime/shared/retry"
)

// Config configures a Ledger. Store, Publisher and Threshold are required.
type Config struct {
	Store     Store
	Publisher Publisher
	// Threshold is the day total at which the spend alarm is raised
	// (DAILY_SPEND_ALARM_USD); it must be positive.
	Threshold money.Micros
	// Now stamps alarms; nil is time.Now.
	Now func() time.Time
	// MaxAttempts bounds the writes of one user-day in one batch when
	// other shards keep writing it; 0 is 8. Past it the day's records are
	// reported as failures and Lambda retries them.
	MaxAttempts int
	// Backoff waits between those attempts; nil is the shared backoff
	// (retry.Backoff) from 10 ms, doubling to 320 ms, with full jitter.
	Backoff Backoff
}

// Backoff waits before retry number attempt (0 after the first failure),
// returning early with ctx's error when ctx is done: retry.Backoff, or a
// recorder in tests.
type Backoff interface {
	Wait(ctx context.Context, attempt int) error
}

// Ledger counts stream batches.
type Ledger struct {
	cfg Config
}

// New checks cfg and returns a Ledger.
func New(cfg Config) (*Ledger, error) {
	var errs []error
	if cfg.Store == nil {
		errs = append(errs, errors.New("ledger: no store"))
	}
	if cfg.Publisher == nil {
		errs = append(errs, errors.New("ledger: no publisher"))
	}
	if cfg.Threshold <= 0 {
		errs = append(errs, fmt.Errorf("ledger: alarm threshold %s is not positive", cfg.Threshold))
	}
	if cfg.MaxAttempts < 0 {
		errs = append(errs, fmt.Errorf("ledger: negative MaxAttempts %d", cfg.MaxAttempts))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.MaxAttempts == 0 {
		cfg.MaxAttempts = 8
	}
	if cfg.Backoff == nil {
		cfg.Backoff = retry.Backoff{Base: 10 * time.Millisecond, Max: 320 * time.Millisecond}
	}
	return &Ledger{cfg: cfg}, nil
}

// Result is what a batch came to.
type Result struct {
	// Failed are the sequence numbers to report as batch item failures:
	// Lambda retries the batch from the lowest.
	Failed []string
	// Records is the batch's size: Processed + len(Skipped) + FailedRecords.
	Records, Processed, FailedRecords int
	// Removes are the REMOVE records among Processed (nothing to count).
	Removes  int
	Skipped  []Skip
	Failures []Failure
	// Days is the number of user-days in the batch; Writes the ledger
	// writes made, Conflicts the re-reads after a concurrent write.
	Days, Writes, Conflicts int
	// CostMicros is the sum of the differences written to the days' usage.
	CostMicros money.Micros
	// Alarms is the number of spend alarms put on the bus.
	Alarms int
}

// Failure is a user-day whose records must be retried.
type Failure struct {
	Key DayKey
	// Seq is the record reported for it: the day's first record in the
	// batch when its write failed, the record that crossed the threshold
	// when the alarm could not be raised.
	Seq string
	Err error
}

// Process counts a batch of stream records, in shard order.
func (l *Ledger) Process(ctx context.Context, records []Record) Result {
	days, removes, skipped := fold(records)
	res := Result{Records: len(records), Removes: removes, Skipped: skipped, Days: len(days)}
	retried := map[string]bool{} // the records of failed days
	fail := func(d *dayRecords, seq string, err error) {
		res.Failures = append(res.Failures, Failure{Key: d.key, Seq: seq, Err: err})
		if !retried[seq] {
			res.Failed = append(res.Failed, seq)
		}
		retried[seq] = true
		for _, s := range d.sightings {
			retried[s.seq] = true
		}
	}
	if len(days) > 0 {
		l.countDays(ctx, days, &res, fail)
	}
	// A record of a failed day is retried, whatever else it counted.
	for _, r := range records {
		if retried[r.Seq] {
			res.FailedRecords++
		}
	}
	res.Processed = res.Records - len(res.Skipped) - res.FailedRecords
	return res
}

// countDays reads the batch's user-days at once, writes each, then
// raises the alarms due.
func (l *Ledger) countDays(ctx context.Context, days []*dayRecords, res *Result, fail func(*dayRecords, string, error)) {
	keys := make([]DayKey, len(days))
	for i, d := range days {
		keys[i] = d.key
	}
	read, err := l.cfg.Store.ReadDays(ctx, keys)
	if err != nil {
		for _, d := range days {
			fail(d, d.first, fmt.Errorf("read user-days: %w", err))
		}
		return
	}
	var due []pending
	for _, d := range days {
		day, a, err := l.count(ctx, d, read[d.key], res)
		if err != nil {
			fail(d, d.first, err)
			continue
		}
		id := AlarmID(d.key, l.cfg.Threshold)
		if day.Book.CostMicros >= l.cfg.Threshold && day.AlarmID != id {
			seq := a.crossing
			if seq == "" {
				seq = d.first
			}
			due = append(due, pending{d: d, day: day, seq: seq, alarm: newAlarm(d.key, day, day.Book.CostMicros, l.cfg.Threshold)})
		}
	}
	l.raise(ctx, due, res, fail)
}

// count writes one user-day's sightings, reading the day again and
// retrying when another writer got there first. It returns the day as
// written and the last apply.
func (l *Ledger) count(ctx context.Context, d *dayRecords, day Day, res *Result) (Day, applied, error) {
	for attempt := 0; ; attempt++ {
		a := apply(day.Book, d.sightings, l.cfg.Threshold)
		if !a.changed {
			return day, a, nil
		}
		next := a.next
		next.Rev = day.Book.Rev + 1
		err := l.cfg.Store.WriteDay(ctx, Write{Key: d.key, From: day.Book.Rev, Next: next, Delta: a.delta})
		if err == nil {
			res.Writes++
			res.CostMicros += a.delta
			day.Book = next
			return day, a, nil
		}
		if !errors.Is(err, ErrConflict) || attempt+1 >= l.cfg.MaxAttempts {
			return day, a, fmt.Errorf("count %s/%s (attempt %d): %w", d.key.UserID, d.key.Day, attempt+1, err)
		}
		res.Conflicts++
		if err := l.cfg.Backoff.Wait(ctx, attempt); err != nil {
			return day, a, fmt.Errorf("count %s/%s: %w", d.key.UserID, d.key.Day, err)
		}
		fresh, err := l.cfg.Store.ReadDays(ctx, []DayKey{d.key})
		if err != nil {
			return day, a, fmt.Errorf("re-read %s/%s: %w", d.key.UserID, d.key.Day, err)
		}
		day = fresh[d.key]
	}
}

// pending is an alarm due on a user-day whose total is counted.
type pending struct {
	d     *dayRecords
	day   Day
	seq   string
	alarm Alarm
}

// raise puts the due alarms on the bus, then marks each day's usage item.
// The event goes first so that it is never lost: a day whose event could
// not be put has no marker, and the retry of its record finds the total
// counted and raises it. A marker that cannot be written also fails the
// record; its retry puts the event again with the same alarmId.
func (l *Ledger) raise(ctx context.Context, due []pending, res *Result, fail func(*dayRecords, string, error)) {
	if len(due) == 0 {
		return
	}
	alarms := make([]Alarm, len(due))
	for i, p := range due {
		alarms[i] = p.alarm
	}
	errs := l.cfg.Publisher.Publish(ctx, alarms)
	now := l.cfg.Now()
	for i, p := range due {
		var err error
		if i < len(errs) {
			err = errs[i]
		} else {
			err = errors.New("publisher returned no result")
		}
		if err != nil {
			fail(p.d, p.seq, fmt.Errorf("put spend alarm: %w", err))
			continue
		}
		res.Alarms++
		if _, err := l.cfg.Store.MarkAlarm(ctx, p.d.key, p.alarm.AlarmID, p.day.AlarmID, now); err != nil {
			fail(p.d, p.seq, fmt.Errorf("mark spend alarm %s: %w", p.alarm.AlarmID, err))
		}
	}
}
