package tablekeys

import (
	"fmt"
	"hash/fnv"
	"strconv"
	"strings"
)

// The two sparse indexes the reaper reads (open runs, live sandboxes) are
// spread over IndexShards partition key values each: one value takes
// about 1,000 writes a second, and a throttled index throttles the writes
// to its table, so a single value would stop admission near 500 turns a
// second (every run writes the open index twice, at admission and at its
// final write).
//
// DefaultIndexShards serves 10 million daily users: at the free ceiling
// of 30 turns a user-day and a 3× peak, 10,000,000 × 30 × 3 / 86,400 ≈
// 10,400 turns/s, so ≈ 20,800 open-index writes/s (two a run) and fewer
// live-index writes (two a sandbox, made by a share of the turns). 20,800
// / 1,000 = 21 values at the limit; 32, the next power of two, leaves each
// value at ≈ 650 writes/s, a third under the limit, and costs the reaper
// 32 small Queries per index a minute (docs/scale.md, "Hot keys").
//
// The shard is a stable hash of the run's or sandbox's id, stored in the
// item's index key when it is written; the final write (or the kill)
// removes the attribute whatever its value. So the count may grow between
// deployments (the reader reads every value below the new count, the old
// ones included) but must never shrink while items are open.
const DefaultIndexShards = 32

// MaxIndexShards bounds a configured count: the shard's two digits in the
// key, and the reaper's Queries a minute.
const MaxIndexShards = 100

// Shard is the shard of id among n (1 ≤ n ≤ MaxIndexShards): FNV-1a of
// the id's bytes modulo n, the same in every process and release.
func Shard(id string, n int) int {
	if n <= 1 {
		return 0
	}
	h := fnv.New32a()
	_, _ = h.Write([]byte(id)) // a hash.Hash never fails to write
	return int(h.Sum32() % uint32(n))
}

// OpenPartition is the open-runs index's partition key value of a shard.
func OpenPartition(shard int) string { return partition(OpenValue, shard) }

// LivePartition is the live-sandbox index's partition key value of a
// shard.
func LivePartition(shard int) string { return partition(LiveValue, shard) }

// partition is base#NN: two digits, so every value has the same length.
func partition(base string, shard int) string { return fmt.Sprintf("%s#%02d", base, shard) }

// The deployment-wide cap on concurrent sandboxes is kept as slots: a
// sandbox holds one from before its creation until its kill, or until
// the slot expires a little after the sandbox's lifetime, so a turn that
// died holding one frees it by itself. The slots are spread over
// SlotShards partition values (a shard's slots are one Query), each
// holding at most SlotsPerShard of them, so no value takes more than a
// shard's share of the creations and kills.
const (
	// SlotsPerShard bounds a shard's slots.
	SlotsPerShard = 64
	slotPrefix    = "SANDBOXCAP"
	streamsPrefix = "STREAMS#"
	slotSK        = "SLOT#"
)

// SlotShards is how many shards a cap of limit sandboxes is spread over:
// one per SlotsPerShard slots, at least one, at most DefaultIndexShards.
func SlotShards(limit int) int {
	return min(max(1, (limit+SlotsPerShard-1)/SlotsPerShard), DefaultIndexShards)
}

// ShardSlots is how many of a cap of limit slots shard holds: the cap
// split evenly over SlotShards(limit), the first shards one more each
// when it does not divide, so the shards hold limit slots together.
func ShardSlots(limit, shard int) int {
	n := SlotShards(limit)
	if limit <= 0 || shard < 0 || shard >= n {
		return 0
	}
	k := limit / n
	if shard < limit%n {
		k++
	}
	return k
}

// SandboxSlot is the key of slot j of a shard of the sandbox cap.
func SandboxSlot(shard, slot int) Key {
	return Key{SandboxSlotPartition(shard), SlotSort(slot)}
}

// SlotSort is the sort key of slot j of a partition of slots.
func SlotSort(slot int) string { return fmt.Sprintf("%s%04d", slotSK, slot) }

// StreamSlot is the key of slot j of a user's cap on open event
// streams: the user's slots are one partition, one Query.
func StreamSlot(userID string, slot int) Key { return Key{StreamSlotPartition(userID), SlotSort(slot)} }

// StreamSlotPartition is the partition key value of a user's stream
// slots.
func StreamSlotPartition(userID string) string { return streamsPrefix + userID }

// SlotIndex is the slot j a SandboxSlot sort key names; false for a sort
// key not of that form.
func SlotIndex(sk string) (int, bool) {
	digits, ok := strings.CutPrefix(sk, slotSK)
	if !ok {
		return 0, false
	}
	j, err := strconv.Atoi(digits)
	return j, err == nil
}

// SandboxSlotPartition is the partition key value of a shard's slots.
func SandboxSlotPartition(shard int) string { return partition(slotPrefix, shard) }
