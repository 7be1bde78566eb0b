package tablekeys

import (
	"fmt"
	"hash/fnv"
	"testing"
)

// TestShardIsStable: a run's shard is written into its index key and
// must be the same in every process and release; the pinned values are
// FNV-1a's (the reference vectors' "a" and "foobar") modulo n.
func TestShardIsStable(t *testing.T) {
	cases := []struct {
		id   string
		n    int
		want int
	}{
		{"a", 1, 0},
		{"a", 0, 0}, // a count below one is one shard
		{"a", DefaultIndexShards, int(uint32(0xe40c292c) % DefaultIndexShards)},
		{"foobar", DefaultIndexShards, int(uint32(0xbf9cf968) % DefaultIndexShards)},
		{"foobar", MaxIndexShards, int(uint32(0xbf9cf968) % MaxIndexShards)},
		{"", 7, int(uint32(0x811c9dc5) % 7)}, // the offset basis
	}
	for _, c := range cases {
		if got := Shard(c.id, c.n); got != c.want {
			t.Errorf("Shard(%q, %d) = %d, want %d", c.id, c.n, got, c.want)
		}
		if c.n > 1 {
			h := fnv.New32a()
			h.Write([]byte(c.id))
			if int(h.Sum32()%uint32(c.n)) != c.want {
				t.Errorf("pinned value of %q is not FNV-1a's", c.id)
			}
		}
	}
}

// TestShardSpreadsIDs: ids of the runtime's shape land in every shard,
// none with more than a third above its fair share.
func TestShardSpreadsIDs(t *testing.T) {
	for _, n := range []int{2, 3, DefaultIndexShards, MaxIndexShards} {
		const ids = 20000
		count := make([]int, n)
		for i := range ids {
			s := Shard(fmt.Sprintf("run-%08x-%d", i*2654435761, i), n)
			if s < 0 || s >= n {
				t.Fatalf("Shard(_, %d) = %d, out of range", n, s)
			}
			count[s]++
		}
		fair := ids / n
		for s, c := range count {
			if c == 0 || c > fair*4/3 {
				t.Errorf("n=%d: shard %d holds %d ids, fair share %d", n, s, c, fair)
			}
		}
	}
}

func TestPartitions(t *testing.T) {
	cases := map[string]string{
		OpenPartition(0):                      "RUN#open#00",
		OpenPartition(DefaultIndexShards - 1): "RUN#open#31",
		LivePartition(0):                      "SANDBOX#live#00",
		LivePartition(MaxIndexShards - 1):     "SANDBOX#live#99",
	}
	for got, want := range cases {
		if got != want {
			t.Errorf("partition %q, want %q", got, want)
		}
	}
	if OpenPartition(1) == LivePartition(1) || OpenPartition(1) == OpenPartition(10) {
		t.Error("partitions collide")
	}
}

// The cap's slots: at most SlotsPerShard a shard where the shards allow,
// every slot of the cap in exactly one shard, none more.
func TestSlotShards(t *testing.T) {
	cases := []struct{ limit, shards int }{
		{1, 1}, {SlotsPerShard, 1}, {SlotsPerShard + 1, 2}, {100, 2}, {1000, 16},
		{DefaultIndexShards * SlotsPerShard, DefaultIndexShards}, {100_000, DefaultIndexShards}, {0, 1},
	}
	for _, c := range cases {
		if got := SlotShards(c.limit); got != c.shards {
			t.Errorf("SlotShards(%d) = %d, want %d", c.limit, got, c.shards)
		}
		total := 0
		for shard := range c.shards {
			k := ShardSlots(c.limit, shard)
			if c.limit >= c.shards && k == 0 {
				t.Errorf("limit %d: shard %d holds no slot", c.limit, shard)
			}
			if c.limit <= DefaultIndexShards*SlotsPerShard && k > SlotsPerShard {
				t.Errorf("limit %d: shard %d holds %d slots", c.limit, shard, k)
			}
			total += k
		}
		if total != max(c.limit, 0) || ShardSlots(c.limit, c.shards) != 0 || ShardSlots(c.limit, -1) != 0 {
			t.Errorf("limit %d: the shards hold %d slots", c.limit, total)
		}
	}
	if k := SandboxSlot(3, 17); k.PK != "SANDBOXCAP#03" || k.SK != "SLOT#0017" {
		t.Errorf("SandboxSlot(3, 17) = %v", k)
	}
}

// TestSlotIndex: a slot's sort key gives back its index, at the shard's
// bounds and past the four digits; any other sort key none.
func TestSlotIndex(t *testing.T) {
	for _, j := range []int{0, 1, SlotsPerShard - 1, SlotsPerShard, 9999, 10000} {
		if got, ok := SlotIndex(SandboxSlot(0, j).SK); !ok || got != j {
			t.Errorf("SlotIndex(SandboxSlot(0, %d).SK) = %d, %v", j, got, ok)
		}
	}
	cases := []struct {
		sk   string
		want int
		ok   bool
	}{
		{"SLOT#0000", 0, true},
		{"SLOT#0063", 63, true},
		{"SLOT#10000", 10000, true},
		{"SLOT#", 0, false},
		{"SLOT#x", 0, false},
		{"SLOT#00 1", 0, false},
		{"SLOT0001", 0, false},
		{"slot#0001", 0, false},
		{"0001", 0, false},
		{"", 0, false},
	}
	for _, c := range cases {
		if got, ok := SlotIndex(c.sk); ok != c.ok || (ok && got != c.want) {
			t.Errorf("SlotIndex(%q) = %d, %v; want %d, %v", c.sk, got, ok, c.want, c.ok)
		}
	}
}
