package turns

import (
	"context"

	"github.com/commonly/runtime/shared/runs"
)

// A turn's journal is what its engine needs to go on in another worker:
// the native loop's messages as the model saw them (each answer with its
// tool calls, each tool result), entry by entry. The cost and bounds
// spent so far are the run's own (steps, tokens, cost), written in the
// same write as the entries they go with, so the two never disagree. The
// worker and the store keep entries without reading them; the engine
// alone gives them meaning.
//
// An entry is durable no later than the run's next write: the events
// flush (EventFlushDelay after it) or a checkpoint, whichever comes
// first. A worker stopped inside that window loses it, and the attempt
// that takes the run over does that step again.

// JournalEntry is one entry of a run's journal: its number (from 0, in
// the order appended) and the engine's data.
type JournalEntry struct {
	Seq  int
	Data string
}

// Journal is what an engine appends to as a turn runs. Never nil from
// the worker.
type Journal interface {
	// Append records data as the journal's next entry, with the run as it
	// stands once the step the entry records is counted (copied here:
	// the engine goes on changing its run). It is written with the run's
	// next write, which Append schedules.
	Append(data string, run *runs.Run)
}

// Resumption is what a taken-over run's engine is given: the journal as
// the stopped attempt left it, and what that attempt was.
type Resumption struct {
	Entries []JournalEntry
	// Sandboxes are the run's sandboxes still recorded running: the
	// stopped attempt's, to be killed before the turn goes on.
	Sandboxes []SandboxRef
	// Lost is the attempt that stopped, with no estimate yet: the engine
	// prices what was in flight (LostAttempt.CostMicros) before it goes
	// on, and the worker records it with its first write.
	Lost runs.LostAttempt
}

// JournalStore reads a run's journal back. The store implements it.
type JournalStore interface {
	// ReadJournal returns the run's entries in order; none for a run
	// without a journal.
	ReadJournal(ctx context.Context, runID string) ([]JournalEntry, error)
}
