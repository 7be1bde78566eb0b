package store

import (
	"context"
	"fmt"
	"time"

	"github.com/commonly/runtime/shared/tablekeys"
	"github.com/commonly/runtime/shared/turns"
)

var _ turns.StreamSlots = (*Dynamo)(nil)

// streamRetryCap bounds the Retry-After of a refused stream: a slot
// frees as soon as one of the user's streams closes.
const streamRetryCap = time.Minute

// AcquireStreamSlot holds one of userID's limit stream slots for holder
// until until: one Query of the user's slots and one conditional Put, as
// the sandbox cap does (takeSlot). With none free, a
// *turns.StreamCapError saying when the first held one lapses.
func (d *Dynamo) AcquireStreamSlot(ctx context.Context, userID string, limit int, holder string, now, until time.Time) (turns.StreamSlot, error) {
	if limit <= 0 {
		return turns.StreamSlot{}, fmt.Errorf("acquire stream slot: limit %d is not positive", limit)
	}
	idx, ok, lapse, err := d.takeSlot(ctx, tablekeys.StreamSlotPartition(userID), limit, holder, now, until)
	if err != nil {
		return turns.StreamSlot{}, fmt.Errorf("stream slots: %w", err)
	}
	if !ok {
		wait := streamRetryCap
		if !lapse.IsZero() {
			wait = min(wait, lapse.Sub(now))
		}
		return turns.StreamSlot{}, &turns.StreamCapError{Limit: limit, RetryAfter: max(wait, time.Second)}
	}
	return turns.StreamSlot{UserID: userID, Index: idx, Holder: holder}, nil
}

// ReleaseStreamSlot deletes the slot if holder still holds it.
func (d *Dynamo) ReleaseStreamSlot(ctx context.Context, slot turns.StreamSlot) error {
	if err := d.dropSlot(ctx, tablekeys.StreamSlot(slot.UserID, slot.Index), slot.Holder); err != nil {
		return fmt.Errorf("release stream slot %d: %w", slot.Index, err)
	}
	return nil
}
