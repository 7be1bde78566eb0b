package store_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/commonly/runtime/shared/turns"
)

// A user's stream cap holds: limit slots, no more (refused with when the
// first lapses), a released slot free again, another user's slots apart,
// a slot past its until free without a release.
func TestStreamSlotsHoldEachUsersCap(t *testing.T) {
	s := newStore(t)
	ctx := context.Background()
	t0 := time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)
	const limit = 2
	var held []turns.StreamSlot
	for i := range limit {
		slot, err := s.AcquireStreamSlot(ctx, "user-1", limit, fmt.Sprintf("stream-%d", i), t0, t0.Add(time.Duration(i+1)*20*time.Second))
		if err != nil {
			t.Fatalf("slot %d: %v", i, err)
		}
		held = append(held, slot)
	}
	_, err := s.AcquireStreamSlot(ctx, "user-1", limit, "stream-x", t0, t0.Add(time.Minute))
	var capErr *turns.StreamCapError
	if !errors.As(err, &capErr) || capErr.Limit != limit || capErr.RetryAfter != 20*time.Second {
		t.Fatalf("past the cap: %v %+v", err, capErr)
	}
	if _, err := s.AcquireStreamSlot(ctx, "user-2", limit, "stream-y", t0, t0.Add(time.Minute)); err != nil {
		t.Fatalf("another user: %v", err)
	}
	if err := s.ReleaseStreamSlot(ctx, turns.StreamSlot{UserID: "user-1", Index: held[0].Index, Holder: "someone-else"}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.AcquireStreamSlot(ctx, "user-1", limit, "stream-x", t0, t0.Add(time.Minute)); !errors.As(err, &capErr) {
		t.Fatalf("after a stranger's release: %v", err)
	}
	if err := s.ReleaseStreamSlot(ctx, held[0]); err != nil {
		t.Fatal(err)
	}
	if got, err := s.AcquireStreamSlot(ctx, "user-1", limit, "stream-x", t0, t0.Add(time.Minute)); err != nil || got.Index != held[0].Index {
		t.Fatalf("after a release: %+v %v", got, err)
	}
	// Once the second slot lapsed, it is free without a release.
	if _, err := s.AcquireStreamSlot(ctx, "user-1", limit, "stream-z", t0.Add(40*time.Second), t0.Add(time.Minute)); err != nil {
		t.Fatalf("after a lapse: %v", err)
	}
}
