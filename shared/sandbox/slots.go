package sandbox

import (
	"context"
	"errors"
	"time"
)

// ErrAtCapacity is a refused slot: the deployment runs as many sandboxes
// at once as its cap allows.
var ErrAtCapacity = errors.New("deployment-wide sandbox cap reached")

// Slot is a place held under the deployment's cap on concurrent
// sandboxes, from before a sandbox is created until it is killed.
type Slot struct {
	Shard, Index int
	// Holder is who holds it (the run's id): only the holder releases it.
	Holder string
}

// Slots keep the deployment-wide cap on concurrent sandboxes. A slot
// expires by itself at the until its holder gave, so a turn that died
// holding one never leaks it. Implemented on DynamoDB (shared/store).
type Slots interface {
	// AcquireSlot holds one of limit slots for holder until until, as of
	// now, or fails with ErrAtCapacity when every slot is held.
	AcquireSlot(ctx context.Context, limit int, holder string, now, until time.Time) (Slot, error)
	// ReleaseSlot frees a slot its holder holds; one held by another
	// holder since (it had expired) is left alone, without an error.
	ReleaseSlot(ctx context.Context, slot Slot) error
}

// SlotGrace is how long after a sandbox's lifetime its slot stays held:
// the provider kills a sandbox at its lifetime by its own clock, so the
// slot outlives the sandbox however the clocks differ.
const SlotGrace = 30 * time.Second
