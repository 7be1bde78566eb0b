package turns

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/commonly/runtime/shared/runs"
)

// EventFlushDelay is how long a run's new events may wait for a write
// that carries them anyway (a checkpoint, the final write) before they
// get one of their own: a reader in another invocation sees a long tool
// call start within it, and a fast turn costs no extra write.
const EventFlushDelay = 250 * time.Millisecond

// eventWriteTimeout bounds one events-only write.
const eventWriteTimeout = 2 * time.Second

// EventWriter saves a running run's events alone, between the run's own
// writes. The store implements it.
type EventWriter interface {
	// SaveRunEvents replaces the run's events with events (a longer
	// prefix of the same sequence), only while the run is running.
	SaveRunEvents(ctx context.Context, runID string, events []runs.StoredEvent) error
}

// runEvents is one run's event log and its writes: the events ride on
// the checkpoints and the final write, and a timer writes them alone at
// most once each EventFlushDelay when neither came.
type runEvents struct {
	log   *runs.EventLog
	runID string
	w     EventWriter // nil: events only ride on the run's writes
	ctx   context.Context
	logf  *slog.Logger
	delay time.Duration

	mu      sync.Mutex // serialises writes, so a shorter snapshot never lands after a longer one
	written int64      // the last event id a write carried
	timerMu sync.Mutex
	timer   *time.Timer
	closed  bool
}

func newRunEvents(ctx context.Context, run *runs.Run, w EventWriter, now func() time.Time, log *slog.Logger) *runEvents {
	e := &runEvents{runID: run.RunID, w: w, ctx: context.WithoutCancel(ctx), logf: log, delay: EventFlushDelay}
	e.log = runs.NewEventLog(run.Events, now, e.kick)
	e.written = e.log.LastID()
	return e
}

// Record is the engine's runs.Recorder.
func (e *runEvents) Record(d runs.EventData) { e.log.Record(d) }

// kick arms the flush timer unless it is armed.
func (e *runEvents) kick() {
	if e.w == nil {
		return
	}
	e.timerMu.Lock()
	defer e.timerMu.Unlock()
	if e.closed || e.timer != nil {
		return
	}
	e.timer = time.AfterFunc(e.delay, e.flush)
}

// flush writes the events no write has carried yet.
func (e *runEvents) flush() {
	e.timerMu.Lock()
	e.timer = nil
	closed := e.closed
	e.timerMu.Unlock()
	if closed {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	snap := e.log.Snapshot()
	if len(snap) == 0 || snap[len(snap)-1].ID <= e.written {
		return
	}
	ctx, cancel := context.WithTimeout(e.ctx, eventWriteTimeout)
	defer cancel()
	if err := e.w.SaveRunEvents(ctx, e.runID, snap); err != nil {
		// The next checkpoint or the final write carries them.
		e.logf.WarnContext(ctx, "writing run events failed", "runId", e.runID, "events", len(snap), "err", err)
		return
	}
	e.written = snap[len(snap)-1].ID
}

// riding puts every event on r for one of the run's own writes, and
// returns the function to call once that write succeeded. The write
// lock is held until then.
func (e *runEvents) riding(r *runs.Run) (done func(ok bool)) {
	e.mu.Lock()
	e.stopTimer()
	r.Events = e.log.Snapshot()
	return func(ok bool) {
		if ok && len(r.Events) > 0 {
			e.written = r.Events[len(r.Events)-1].ID
		}
		e.mu.Unlock()
	}
}

// checkpoint wraps the store's checkpoint so that it carries the events.
func (e *runEvents) checkpoint(save func(context.Context, *runs.Run) error) func(context.Context, *runs.Run) error {
	return func(ctx context.Context, r *runs.Run) error {
		done := e.riding(r)
		err := save(ctx, r)
		done(err == nil)
		return err
	}
}

// close stops the timer for good and puts every event on the final run.
func (e *runEvents) close(r *runs.Run) {
	e.timerMu.Lock()
	e.closed = true
	e.timerMu.Unlock()
	done := e.riding(r)
	done(false)
}

func (e *runEvents) stopTimer() {
	e.timerMu.Lock()
	defer e.timerMu.Unlock()
	if e.timer != nil {
		e.timer.Stop()
		e.timer = nil
	}
}
