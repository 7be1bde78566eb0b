package turns

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"time"
)

// DefaultStreamsPerUser is how many event streams a user may hold open
// at once when WatcherConfig leaves it zero.
const DefaultStreamsPerUser = 5

// streamSlotGrace is how long past a stream's own end its slot stays
// held: a slot whose release was lost (the environment ended) lapses by
// itself, without a write per stream to keep it.
const streamSlotGrace = 30 * time.Second

// StreamSlot is a place a stream holds under its user's cap.
type StreamSlot struct {
	UserID string
	Index  int
	Holder string
}

// StreamSlots keep each user's cap on open event streams in the state
// table, as the sandbox cap's slots do; the store implements it.
type StreamSlots interface {
	// AcquireStreamSlot holds one of userID's limit slots for holder
	// until until, as of now; with none free, a *StreamCapError.
	AcquireStreamSlot(ctx context.Context, userID string, limit int, holder string, now, until time.Time) (StreamSlot, error)
	// ReleaseStreamSlot frees a slot its holder holds; one taken over
	// since is left alone.
	ReleaseStreamSlot(ctx context.Context, slot StreamSlot) error
}

// StreamCapError: the user holds as many streams as allowed.
type StreamCapError struct {
	Limit int
	// RetryAfter is when the first of the held slots lapses by itself,
	// at most a minute (a stream that closes frees its slot at once).
	RetryAfter time.Duration
}

func (e *StreamCapError) Error() string {
	return fmt.Sprintf("%d event streams open, the most a user may hold", e.Limit)
}

// holdStreamSlot takes a slot for the caller's stream, until the
// stream's deadline (ctx's, or the longest a stream lasts) and a grace;
// the function it returns frees it. A service caller is not capped: the
// backend watches its users' runs.
func (w *Watcher) holdStreamSlot(ctx context.Context, c Caller) (release func(), err error) {
	if w.slots == nil || c.Service {
		return func() {}, nil
	}
	now := w.now()
	until := now.Add(maxStream)
	if d, ok := ctx.Deadline(); ok && d.Before(until) {
		until = d
	}
	var b [8]byte
	_, _ = rand.Read(b[:])
	slot, err := w.slots.AcquireStreamSlot(ctx, c.ID, w.perUser, hex.EncodeToString(b[:]), now, until.Add(streamSlotGrace))
	var capErr *StreamCapError
	if errors.As(err, &capErr) {
		return nil, err
	}
	if err != nil {
		return nil, wrapUnavailable("hold a stream slot", err)
	}
	return func() {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
		defer cancel()
		if err := w.slots.ReleaseStreamSlot(rctx, slot); err != nil {
			// It lapses by itself at its end.
			w.log.WarnContext(rctx, "releasing a stream slot failed", "userId", c.ID, "err", err)
		}
	}, nil
}

// maxStream bounds a stream with no deadline: a function URL's longest
// invocation.
const maxStream = 15 * time.Minute
