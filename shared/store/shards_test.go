package store_test

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/commonly/runtime/internal/dynamodblocal"
	"github.com/commonly/runtime/shared/sandbox"
	"github.com/commonly/runtime/shared/store"
	"github.com/commonly/runtime/shared/tablekeys"
)

// newShardedStore is a store on its own embedded server with its indexes
// over shards shards (0: the default).
func newShardedStore(t *testing.T, shards int) *store.Dynamo {
	t.Helper()
	srv, err := dynamodblocal.StartWithTables(context.Background(), "127.0.0.1:0", tables)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	s, err := store.New(store.Config{DB: srv.Client(), Tables: tables, IndexShards: shards})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// expiredAll reads every shard of the live index, as the reaper does.
func expiredAll(ctx context.Context, s *store.Dynamo, bound time.Time, limit int32) ([]sandbox.Record, error) {
	var all []sandbox.Record
	for shard := range s.IndexShards() {
		recs, err := s.ExpiredSandboxes(ctx, shard, bound, limit)
		all = append(all, recs...)
		if err != nil {
			return all, err
		}
	}
	slices.SortStableFunc(all, func(a, b sandbox.Record) int { return a.ExpiresAt.Compare(b.ExpiresAt) })
	return all, nil
}

// idsOnEveryShard makes ids until each of n shards has per of them, and
// returns them with their shards.
func idsOnEveryShard(prefix string, n, per int) map[string]int {
	ids := map[string]int{}
	count := make([]int, n)
	for i, full := 0, 0; full < n; i++ {
		id := fmt.Sprintf("%s-%04d", prefix, i)
		sh := tablekeys.Shard(id, n)
		if count[sh] == per {
			continue
		}
		ids[id] = sh
		if count[sh]++; count[sh] == per {
			full++
		}
	}
	return ids
}

// Every shard of the open index holds the open runs of its ids' shard and
// no other: a shard's Query lists exactly those, and the shards together
// list every open run once. A shard outside the count is refused.
func TestOpenRunsReadsOneShard(t *testing.T) {
	for _, shards := range []int{0, 3} {
		t.Run(fmt.Sprintf("shards=%d", shards), func(t *testing.T) {
			s, _, _ := reclaimStore(t, shards)
			n := s.IndexShards()
			ctx := context.Background()
			t0 := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
			ids := idsOnEveryShard("run", n, 2)
			for id := range ids {
				admit(t, s, id, t0)
			}
			seen := map[string]bool{}
			for shard := range n {
				open, err := s.OpenRuns(ctx, shard, t0.Add(time.Second), 10)
				if err != nil {
					t.Fatal(err)
				}
				if len(open) != 2 {
					t.Errorf("shard %d lists %d runs, want 2", shard, len(open))
				}
				for _, o := range open {
					if ids[o.RunID] != shard || seen[o.RunID] {
						t.Errorf("shard %d lists %s (its shard %d, seen before %v)", shard, o.RunID, ids[o.RunID], seen[o.RunID])
					}
					seen[o.RunID] = true
				}
			}
			if len(seen) != len(ids) {
				t.Errorf("the shards list %d of %d open runs", len(seen), len(ids))
			}
			for _, shard := range []int{-1, n} {
				if _, err := s.OpenRuns(ctx, shard, t0, 10); err == nil {
					t.Errorf("shard %d of %d accepted", shard, n)
				}
			}
		})
	}
}

// The same for the live index: each sandbox record on its id's shard,
// killed ones off it, every expired one listed once across the shards.
func TestExpiredSandboxesReadsOneShard(t *testing.T) {
	s := newShardedStore(t, 0)
	n := s.IndexShards()
	ctx := context.Background()
	t0 := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	ids := idsOnEveryShard("sbx", n, 2)
	sorted := slices.SortedFunc(func(yield func(string) bool) {
		for id := range ids {
			if !yield(id) {
				return
			}
		}
	}, cmp.Compare)
	killed := map[string]bool{}
	for i, id := range sorted {
		if err := s.SandboxCreated(ctx, sandbox.NewRecord("e2b", id, sandbox.Meta{RunID: "r"}, t0)); err != nil {
			t.Fatal(err)
		}
		if i%7 == 0 {
			if err := s.SandboxKilled(ctx, id, t0); err != nil {
				t.Fatal(err)
			}
			killed[id] = true
		}
	}
	listed := 0
	for shard := range n {
		recs, err := s.ExpiredSandboxes(ctx, shard, t0.Add(time.Hour), 10)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range recs {
			if ids[r.SandboxID] != shard || killed[r.SandboxID] {
				t.Errorf("shard %d lists %s (its shard %d, killed %v)", shard, r.SandboxID, ids[r.SandboxID], killed[r.SandboxID])
			}
		}
		listed += len(recs)
	}
	if want := len(ids) - len(killed); listed != want {
		t.Errorf("the shards list %d running sandboxes, want %d", listed, want)
	}
	for _, shard := range []int{-1, n} {
		if _, err := s.ExpiredSandboxes(ctx, shard, t0, 10); err == nil {
			t.Errorf("shard %d of %d accepted", shard, n)
		}
	}
}

// The shard count: zero is the default, the bounds are checked.
func TestIndexShardsConfig(t *testing.T) {
	db := &queryingDB{}
	for _, c := range []struct {
		shards, want int
		ok           bool
	}{{0, tablekeys.DefaultIndexShards, true}, {1, 1, true}, {tablekeys.MaxIndexShards, tablekeys.MaxIndexShards, true}, {-1, 0, false}, {tablekeys.MaxIndexShards + 1, 0, false}} {
		s, err := store.New(store.Config{DB: db, Tables: tables, IndexShards: c.shards})
		if (err == nil) != c.ok {
			t.Errorf("IndexShards %d: %v", c.shards, err)
			continue
		}
		if c.ok && s.IndexShards() != c.want {
			t.Errorf("IndexShards %d: the store has %d, want %d", c.shards, s.IndexShards(), c.want)
		}
	}
}
