package store_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/commonly/runtime/shared/sandbox"
	"github.com/commonly/runtime/shared/tablekeys"
)

// The cap holds: limit slots and no more, a released slot is free again,
// only its holder releases it, and a slot past its until is free without
// a release (a turn that died holding one).
func TestSandboxSlotsHoldTheCap(t *testing.T) {
	s := newStore(t)
	ctx := context.Background()
	t0 := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	until := t0.Add(sandbox.Lifetime + sandbox.SlotGrace)
	const limit = 3
	var held []sandbox.Slot
	for i := range limit {
		slot, err := s.AcquireSlot(ctx, limit, fmt.Sprintf("run-%d", i), t0, until)
		if err != nil {
			t.Fatalf("slot %d of %d: %v", i+1, limit, err)
		}
		held = append(held, slot)
	}
	if _, err := s.AcquireSlot(ctx, limit, "run-x", t0, until); !errors.Is(err, sandbox.ErrAtCapacity) {
		t.Fatalf("a slot past the cap: %v, want ErrAtCapacity", err)
	}
	// Another holder's release leaves the slot held.
	if err := s.ReleaseSlot(ctx, sandbox.Slot{Shard: held[0].Shard, Index: held[0].Index, Holder: "someone-else"}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.AcquireSlot(ctx, limit, "run-x", t0, until); !errors.Is(err, sandbox.ErrAtCapacity) {
		t.Fatalf("after a stranger's release: %v, want ErrAtCapacity", err)
	}
	if err := s.ReleaseSlot(ctx, held[1]); err != nil {
		t.Fatal(err)
	}
	got, err := s.AcquireSlot(ctx, limit, "run-y", t0, until)
	if err != nil || got.Index != held[1].Index {
		t.Fatalf("after a release: %+v, %v; want slot %d", got, err, held[1].Index)
	}
	// A second release of a slot taken over is the new holder's.
	if err := s.ReleaseSlot(ctx, held[1]); err != nil {
		t.Fatal(err)
	}
	if _, err := s.AcquireSlot(ctx, limit, "run-z", t0, until); !errors.Is(err, sandbox.ErrAtCapacity) {
		t.Fatalf("a stale release freed the new holder's slot: %v", err)
	}
	// At until every slot has lapsed.
	for i := range limit {
		if _, err := s.AcquireSlot(ctx, limit, fmt.Sprintf("later-%d", i), until, until.Add(time.Minute)); err != nil {
			t.Fatalf("slot %d after the others lapsed: %v", i+1, err)
		}
	}
	if _, err := s.AcquireSlot(ctx, 0, "run", t0, until); err == nil || errors.Is(err, sandbox.ErrAtCapacity) {
		t.Errorf("a limit of 0: %v", err)
	}
}

// Turns racing for the slots never hold more than the cap, never the
// same slot twice, and never more than a shard's share of a shard: a cap
// over several shards, more turns than slots, all at once.
func TestSandboxSlotsUnderRace(t *testing.T) {
	s := newStore(t)
	ctx := context.Background()
	t0 := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	const limit, turns = 150, 240
	if tablekeys.SlotShards(limit) < 3 {
		t.Fatal("the test wants a cap over several shards")
	}
	var (
		mu      sync.Mutex
		got     = map[sandbox.Slot]bool{}
		refused int
		wg      sync.WaitGroup
	)
	for i := range turns {
		wg.Go(func() {
			slot, err := s.AcquireSlot(ctx, limit, "run", t0, t0.Add(time.Minute))
			mu.Lock()
			defer mu.Unlock()
			switch {
			case errors.Is(err, sandbox.ErrAtCapacity):
				refused++
			case err != nil:
				t.Errorf("turn %d: %v", i, err)
			case got[slot]:
				t.Errorf("slot %+v taken twice", slot)
			default:
				got[slot] = true
			}
		})
	}
	wg.Wait()
	perShard := map[int]int{}
	for slot := range got {
		perShard[slot.Shard]++
	}
	for shard, n := range perShard {
		if n > tablekeys.ShardSlots(limit, shard) {
			t.Errorf("shard %d holds %d slots, its share is %d", shard, n, tablekeys.ShardSlots(limit, shard))
		}
	}
	if len(got) > limit || len(got)+refused != turns || refused < turns-limit {
		t.Errorf("%d slots held, %d refused, of %d turns; cap %d", len(got), refused, turns, limit)
	}
}
