package turns

import (
	"context"
	"fmt"
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
}

// RunReader reads a run; the store implements it.
type RunReader interface {
	GetRun(ctx context.Context, runID string) (*runs.Run, error)
}

// WatcherConfig configures a Watcher.
type WatcherConfig struct {
	// Runs is required.
	Runs RunReader
}

// Watcher reads runs' event streams (GET /v1/runs/{runId}/events). It
// needs only the runs, so the function that serves the stream reads the
// runs table and nothing else.
type Watcher struct {
	runs RunReader
}

// NewWatcher checks cfg.
func NewWatcher(cfg WatcherConfig) (*Watcher, error) {
	if cfg.Runs == nil {
		return nil, fmt.Errorf("turns: a watcher needs the runs")
	}
	return &Watcher{runs: cfg.Runs}, nil
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
	r, err := w.read(ctx, c, runID)
	if err != nil {
		return err
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
	var top int64
	for _, e := range r.Events {
		top = max(top, e.ID)
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
	id := top + 1
	if last > id {
		// The reader has ids past the stored ones: a close from a copy
		// read before the worker's last events-only write (the reaper's,
		// of an abandoned run) cut the stored events back. The end still
		// comes, after what the reader has, so a stream never closes
		// without it. (last == id is the reader that has run.finished.)
		id = last + 1
	}
	if id > last {
		d := runs.RunFinishedOf(r)
		at := time.Time{}
		if r.CompletedAt != nil {
			at = *r.CompletedAt
		}
		if err := send(runs.StoredEvent{ID: id, Type: runs.EventRunFinished, Data: runs.EncodeEvent(id, d, at)}); err != nil {
			return last, false, err
		}
		last = id
	}
	return last, true, nil
}
