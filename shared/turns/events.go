package turns

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/commonly/runtime/shared/runs"
)

// EventFlushDelay is how long a run's new events (and journal entries)
// may wait for a write that carries them anyway (a checkpoint, the final
// write) before they get one of their own: a reader in another
// invocation sees a long tool call start within it, a model answer is
// durable within it, and a fast turn costs no extra write.
const EventFlushDelay = 250 * time.Millisecond

// eventWriteTimeout bounds one write of the run's own (an events flush, a
// heartbeat), or one look at it.
const eventWriteTimeout = 2 * time.Second

// LookAfter is how long a worker goes without touching its run (no
// write, no read) before it reads it, to learn of a cancel within a
// second even through a wait with nothing to write.
const LookAfter = time.Second

// EventWriter saves a running run's events alone, between the run's own
// writes, and renews its lease through a silence. The store implements
// it. Both are conditional on attempt holding the run (ErrLeaseLost,
// ErrAlreadyFinal otherwise) and renew its lease to l.
type EventWriter interface {
	// SaveRunEvents replaces the run's events with events (a longer
	// prefix of the same sequence).
	SaveRunEvents(ctx context.Context, runID string, attempt int, l runs.Lease, events []runs.StoredEvent) error
	// RenewLease renews the lease alone.
	RenewLease(ctx context.Context, runID string, attempt int, l runs.Lease) error
}

// runWriter is one attempt's writes of its run: the event log, the
// journal entries not yet durable, and the lease every write renews. The
// events and entries ride on the checkpoints and the final write; a
// timer writes them alone at most once each EventFlushDelay when neither
// came (with the run as the last entry left it, when entries wait), and
// another renews the lease alone after HeartbeatAfter without a write. A
// write refused because another attempt took the run over stops the
// attempt (lost).
type runWriter struct {
	log   *runs.EventLog
	runID string
	w     EventWriter // nil: events only ride on the run's writes
	ctx   context.Context
	logf  *slog.Logger
	now   func() time.Time
	delay time.Duration
	// save is the store's checkpoint: the run whole, with the entries.
	save func(ctx context.Context, r *runs.Run, journal []JournalEntry) error
	// look reads the run, to learn of a cancel through a silence.
	look func(ctx context.Context, runID string) (*runs.Run, error)
	// lost is told once a write is refused for a newer attempt.
	lost func(error)

	// attempt, started and priorWorked make each write's lease: the
	// attempt's number and claim, and the run's working time before it.
	attempt     int
	token       string
	started     time.Time
	priorWorked int64

	mu      sync.Mutex // serialises writes, so a shorter snapshot never lands after a longer one
	written int64      // the last event id a write carried
	// entries are the journal entries not yet written, snap the run as
	// the last of them left it; next is the next entry's number.
	entries []JournalEntry
	snap    *runs.Run
	next    int

	timerMu   sync.Mutex
	timer     *time.Timer
	heartbeat *time.Timer
	closed    bool
	// touched is when the run was last written or read; looker ends the
	// looks.
	touched time.Time
	looker  *time.Ticker
	done    chan struct{}
}

// newRunWriter starts the writes of the attempt that claimed run: its
// events after those the run has, its journal after the entries it has
// (journal), its lease from the claim.
func newRunWriter(ctx context.Context, run *runs.Run, journal int, w EventWriter, save func(context.Context, *runs.Run, []JournalEntry) error,
	look func(context.Context, string) (*runs.Run, error), now func() time.Time, log *slog.Logger, lost func(error)) *runWriter {
	e := &runWriter{
		runID: run.RunID, w: w, save: save, look: look, ctx: context.WithoutCancel(ctx), logf: log, now: now, delay: EventFlushDelay, lost: lost,
		touched: now(), done: make(chan struct{}),
		attempt: run.Attempts, token: run.Lease.Token, started: time.UnixMilli(run.Lease.StartedMs), priorWorked: run.Lease.WorkedMs,
		next: journal,
	}
	if run.Lease.StartedMs == 0 {
		e.started = now()
	}
	e.log = runs.NewEventLog(run.Events, now, e.kick)
	e.written = e.log.LastID()
	e.armHeartbeat()
	if w != nil && look != nil {
		e.looker = time.NewTicker(LookAfter / 2)
		go e.watch()
	}
	return e
}

// watch reads the run when nothing touched it for LookAfter: a cancel
// asked for while the turn waits on the model or a code run stops it
// within about a second.
func (e *runWriter) watch() {
	for {
		select {
		case <-e.done:
			return
		case <-e.looker.C:
		}
		e.mu.Lock()
		due := !e.isClosed() && e.now().Sub(e.touched) >= LookAfter
		e.mu.Unlock()
		if !due {
			continue
		}
		// Read without the lock: the turn's journal and writes go on.
		ctx, cancel := context.WithTimeout(e.ctx, eventWriteTimeout)
		cur, err := e.look(ctx, e.runID)
		cancel()
		if err == nil {
			e.mu.Lock()
			e.touched = e.now()
			e.mu.Unlock()
		}
		switch {
		case err != nil:
			e.logf.WarnContext(e.ctx, "reading the run for a cancel failed", "runId", e.runID, "err", err)
		case cur.Status.Final():
			e.failed(e.ctx, "", ErrAlreadyFinal)
		case cur.Attempts != e.attempt:
			e.failed(e.ctx, "", ErrLeaseLost)
		case cur.CancelRequestedAt != nil:
			e.failed(e.ctx, "", ErrCancelled)
		}
	}
}

// Record is the engine's runs.Recorder.
func (e *runWriter) Record(d runs.EventData) { e.log.Record(d) }

// Append is the engine's Journal: the entry waits for the run's next
// write, which the flush timer makes at the latest.
func (e *runWriter) Append(data string, run *runs.Run) {
	snap := snapshot(run)
	e.mu.Lock()
	e.entries = append(e.entries, JournalEntry{Seq: e.next, Data: data})
	e.next++
	e.snap = snap
	e.mu.Unlock()
	e.kick()
}

// lease is the lease a write made now renews.
func (e *runWriter) lease() runs.Lease {
	now := e.now()
	return runs.Lease{
		Token: e.token, UntilMs: now.Add(LeaseDuration).UnixMilli(), StartedMs: e.started.UnixMilli(),
		WorkedMs: e.priorWorked + max(now.Sub(e.started).Milliseconds(), 0), WrittenBy: e.attempt,
	}
}

// stamp puts the lease a write made now renews on r.
func (e *runWriter) stamp(r *runs.Run) { r.Lease = e.lease() }

// kick arms the flush timer unless it is armed.
func (e *runWriter) kick() {
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

// flush writes the events and entries no write has carried yet: the
// entries with the run they left (a checkpoint), the events alone
// otherwise.
func (e *runWriter) flush() {
	e.timerMu.Lock()
	e.timer = nil
	closed := e.closed
	e.timerMu.Unlock()
	if closed {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.isClosed() {
		return
	}
	ctx, cancel := context.WithTimeout(e.ctx, eventWriteTimeout)
	defer cancel()
	snap := e.log.Snapshot()
	var err error
	switch {
	case len(e.entries) > 0 && e.snap != nil:
		r := e.snap
		r.Events = snap
		e.stamp(r)
		if err = e.checkpointLocked(ctx, r); err == nil {
			e.snap = nil
		}
	case len(snap) == 0 || snap[len(snap)-1].ID <= e.written:
		return
	default:
		if err = e.w.SaveRunEvents(ctx, e.runID, e.attempt, e.lease(), snap); err == nil {
			e.written = snap[len(snap)-1].ID
			e.touched = e.now()
			e.armHeartbeat()
		}
	}
	if err != nil {
		e.failed(ctx, "writing run events failed", err)
	}
}

// checkpointLocked writes r with the waiting entries; e.mu is held.
func (e *runWriter) checkpointLocked(ctx context.Context, r *runs.Run) error {
	err := e.save(ctx, r, e.entries)
	if err == nil {
		e.wrote(r)
	}
	return err
}

// isClosed reports whether the writer was closed: a timer that fired
// before it was stopped writes nothing after the final write.
func (e *runWriter) isClosed() bool {
	e.timerMu.Lock()
	defer e.timerMu.Unlock()
	return e.closed
}

// wrote records a write that carried r's events and every waiting entry;
// e.mu is held.
func (e *runWriter) wrote(r *runs.Run) {
	e.entries = nil
	e.touched = e.now()
	if len(r.Events) > 0 {
		e.written = r.Events[len(r.Events)-1].ID
	}
	e.armHeartbeat()
}

// failed handles a write of the run's own that failed: a refusal for a
// newer attempt stops the attempt, one for a cancel stops the turn (its
// worker ends the run cancelled); anything else waits for the next
// write, which carries what this one did not.
func (e *runWriter) failed(ctx context.Context, msg string, err error) {
	switch {
	case errors.Is(err, ErrCancelled):
		e.logf.InfoContext(ctx, "the run's owner asked to stop it; the turn stops", "runId", e.runID, "attempt", e.attempt)
		e.stop()
		e.lost(err)
	case errors.Is(err, ErrLeaseLost) || errors.Is(err, ErrAlreadyFinal):
		e.logf.WarnContext(ctx, "the run was taken over or closed by another writer; this attempt stops", "runId", e.runID, "attempt", e.attempt, "err", err)
		e.stop()
		e.lost(err)
	default:
		e.logf.WarnContext(ctx, msg, "runId", e.runID, "err", err)
	}
}

// armHeartbeat (re)starts the silence after which the lease is renewed
// alone.
func (e *runWriter) armHeartbeat() {
	if e.w == nil {
		return
	}
	e.timerMu.Lock()
	defer e.timerMu.Unlock()
	if e.closed {
		return
	}
	if e.heartbeat == nil {
		e.heartbeat = time.AfterFunc(HeartbeatAfter, e.beat)
		return
	}
	e.heartbeat.Reset(HeartbeatAfter)
}

// beat renews the lease alone.
func (e *runWriter) beat() {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.isClosed() {
		return
	}
	ctx, cancel := context.WithTimeout(e.ctx, eventWriteTimeout)
	defer cancel()
	if err := e.w.RenewLease(ctx, e.runID, e.attempt, e.lease()); err != nil {
		e.failed(ctx, "renewing the run's lease failed", err)
		return
	}
	e.touched = e.now()
	e.armHeartbeat()
}

// checkpoint is the engine's checkpoint: the run whole, with its events
// and the waiting journal entries, renewing the lease.
func (e *runWriter) checkpoint(ctx context.Context, r *runs.Run) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.stopTimer()
	r.Events = e.log.Snapshot()
	e.stamp(r)
	if err := e.checkpointLocked(ctx, r); err != nil {
		e.failed(ctx, "checkpoint failed", err)
		return err
	}
	e.snap = nil
	return nil
}

// release stops the timers for good and writes r, not final, with every
// event and waiting entry, under a lease that has lapsed already: the
// next dispatch need not wait to take it over.
func (e *runWriter) release(ctx context.Context, r *runs.Run) error {
	e.stop()
	e.mu.Lock()
	defer e.mu.Unlock()
	r.Events = e.log.Snapshot()
	e.stamp(r)
	r.Lease.UntilMs = e.now().UnixMilli() - 1
	return e.checkpointLocked(ctx, r)
}

// close stops the timers for good and puts every event and the lease on
// the final run.
func (e *runWriter) close(r *runs.Run) {
	e.stop()
	e.mu.Lock()
	defer e.mu.Unlock()
	r.Events = e.log.Snapshot()
	e.stamp(r)
}

// stop stops the timers and the looks for good.
func (e *runWriter) stop() {
	e.timerMu.Lock()
	defer e.timerMu.Unlock()
	if !e.closed && e.looker != nil {
		e.looker.Stop()
		close(e.done)
	}
	e.closed = true
	if e.timer != nil {
		e.timer.Stop()
		e.timer = nil
	}
	if e.heartbeat != nil {
		e.heartbeat.Stop()
	}
}

func (e *runWriter) stopTimer() {
	e.timerMu.Lock()
	defer e.timerMu.Unlock()
	if e.timer != nil {
		e.timer.Stop()
		e.timer = nil
	}
}

// snapshot copies what a write of the run reads, so that the engine may
// go on changing its run while a flush writes the copy.
func snapshot(r *runs.Run) *runs.Run {
	c := *r
	c.Steps = slices.Clone(r.Steps)
	for i := range c.Steps {
		c.Steps[i].ToolCalls = slices.Clone(c.Steps[i].ToolCalls)
	}
	c.LostAttempts = slices.Clone(r.LostAttempts)
	c.UnavailableTools = slices.Clone(r.UnavailableTools)
	return &c
}
