package turns

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/commonly/runtime/shared/runs"
	"github.com/commonly/runtime/shared/tablekeys"
)

// Defaults of WatchOptions.
const (
	DefaultWatchPoll      = 250 * time.Millisecond
	DefaultWatchHeartbeat = 15 * time.Second
)

// WatchOptions say how a run's events are read.
type WatchOptions struct {
	// After is the id of the last event the reader has (Last-Event-ID);
	// only later events are sent.
	After int64
	// Poll is how often a running run is read again; zero is
	// DefaultWatchPoll.
	Poll time.Duration
	// Heartbeat is how long the stream may stay silent before Beat is
	// called; zero is DefaultWatchHeartbeat.
	Heartbeat time.Duration
	// Send gets each event in order; an error ends the watch with it (the
	// reader went away).
	Send func(runs.StoredEvent) error
	// Beat keeps an idle connection open; optional.
	Beat func() error
	// Open is called once before anything is sent, when the stream
	// begins: the caller may see the run, it is not already complete,
	// and a slot under the user's cap is held. An error ends the watch
	// with it. Optional.
	Open func() error
}

// MaxEventID bounds the ids a reader may claim to have (Last-Event-ID):
// the largest integer a JavaScript number holds exactly, far past any
// run's events, so no id arithmetic overflows.
const MaxEventID = 1<<53 - 1

// ErrStreamComplete: the reader already has every event of a finished
// run, run.finished included (it reconnected with that event's id); the
// events route answers 204, which tells an SSE client to stop.
var ErrStreamComplete = errors.New("the reader has every event of the finished run")

// RunReader reads a run; the store implements it.
type RunReader interface {
	GetRun(ctx context.Context, runID string) (*runs.Run, error)
}

// WatcherConfig configures a Watcher.
type WatcherConfig struct {
	// Runs is required.
	Runs RunReader
	// Slots, when set, cap each user's open streams at StreamsPerUser
	// (zero: DefaultStreamsPerUser).
	Slots          StreamSlots
	StreamsPerUser int
	// Now is the clock of the slots; nil is time.Now. Log gets what
	// fails after the stream began; nil is slog.Default().
	Now func() time.Time
	Log *slog.Logger
}

// Watcher reads runs' event streams (GET /v1/runs/{runId}/events). It
// needs only the runs, so the function that serves the stream reads the
// runs table and nothing else.
type Watcher struct {
	runs    RunReader
	slots   StreamSlots
	perUser int
	now     func() time.Time
	log     *slog.Logger
}

// NewWatcher checks cfg and fills its defaults.
func NewWatcher(cfg WatcherConfig) (*Watcher, error) {
	if cfg.Runs == nil {
		return nil, fmt.Errorf("turns: a watcher needs the runs")
	}
	if cfg.StreamsPerUser < 0 {
		return nil, fmt.Errorf("turns: StreamsPerUser %d is negative", cfg.StreamsPerUser)
	}
	w := &Watcher{runs: cfg.Runs, slots: cfg.Slots, perUser: cfg.StreamsPerUser, now: cfg.Now, log: cfg.Log}
	if w.perUser == 0 {
		w.perUser = DefaultStreamsPerUser
	}
	if w.now == nil {
		w.now = time.Now
	}
	if w.log == nil {
		w.log = slog.Default()
	}
	return w, nil
}

// Watch sends a run's events after opts.After, in order, each once,
// until run.finished was sent (nil) or ctx ends (its cause: the stream
// is closed, the client resumes with the last id it got). run.finished
// is derived from the final run, with the id after its last stored
// event, so it always says what GET /v1/runs/{runId} says. The caller is
// checked before anything is sent, as GetRun checks it: a foreign or
// missing run is ErrNotFound.
func (w *Watcher) Watch(ctx context.Context, c Caller, runID string, opts WatchOptions) error {
	if opts.Send == nil {
		return fmt.Errorf("turns: Watch needs Send")
	}
	poll := opts.Poll
	if poll <= 0 {
		poll = DefaultWatchPoll
	}
	beat := opts.Heartbeat
	if beat <= 0 {
		beat = DefaultWatchHeartbeat
	}
	if opts.After < 0 || opts.After > MaxEventID {
		return Invalid("Last-Event-ID", "must be an event id: an integer from 0 to %d", int64(MaxEventID))
	}
	r, err := w.read(ctx, c, runID)
	if err != nil {
		return err
	}
	if r.Status.Final() && opts.After == finishedID(r, opts.After) {
		return ErrStreamComplete
	}
	release, err := w.holdStreamSlot(ctx, c)
	if err != nil {
		return err
	}
	defer release()
	if opts.Open != nil {
		if err := opts.Open(); err != nil {
			return err
		}
	}
	last := opts.After
	// The heartbeat keeps a connection open: real time, not a clock a
	// test sets.
	quiet := time.Now()
	for {
		next, done, err := sendNew(r, last, opts.Send)
		if next != last {
			quiet = time.Now()
		}
		last = next
		if err != nil || done {
			return err
		}
		if opts.Beat != nil && time.Since(quiet) >= beat {
			if err := opts.Beat(); err != nil {
				return err
			}
			quiet = time.Now()
		}
		t := time.NewTimer(poll)
		select {
		case <-ctx.Done():
			t.Stop()
			return context.Cause(ctx)
		case <-t.C:
		}
		if r, err = w.runs.GetRun(ctx, runID); err != nil {
			return wrapUnavailable("read run", err)
		}
	}
}

// read is the run if the caller may see it.
func (w *Watcher) read(ctx context.Context, c Caller, runID string) (*runs.Run, error) {
	if c.ID == "" {
		return nil, ErrUnauthenticated
	}
	if !tablekeys.ValidID(c.ID) {
		return nil, ErrMalformedIdentity
	}
	return readRun(ctx, w.runs, c, runID)
}

// sendNew sends r's events after last, and run.finished when r is final.
// It returns the last id sent and whether the stream is complete.
func sendNew(r *runs.Run, last int64, send func(runs.StoredEvent) error) (int64, bool, error) {
	for _, e := range r.Events {
		if e.ID <= last {
			continue
		}
		if err := send(e); err != nil {
			return last, false, err
		}
		last = e.ID
	}
	if !r.Status.Final() {
		return last, false, nil
	}
	if id := finishedID(r, last); id > last {
		d := runs.RunFinishedOf(r)
		if err := send(runs.StoredEvent{ID: id, Type: runs.EventRunFinished, Data: runs.EncodeEvent(id, d, runs.FinishedAt(r))}); err != nil {
			return last, false, err
		}
		last = id
	}
	return last, true, nil
}

// finishedID is the id of a final run's run.finished for a reader that
// has ids up to last: the one after its stored events, or, when the
// reader has ids past them, the one after the reader's. That happens
// when a close from a copy read before the worker's last events-only
// write (the reaper's, of an abandoned run) cut the stored events back:
// the end still comes, after what the reader has, so a stream never
// closes without it. (last == the stored events' next id is the reader
// that has run.finished.)
func finishedID(r *runs.Run, last int64) int64 {
	var top int64
	for _, e := range r.Events {
		top = max(top, e.ID)
	}
	if last > top+1 {
		return last + 1
	}
	return top + 1
}
