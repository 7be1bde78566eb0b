package reaper_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/commonly/runtime/shared/reaper"
	"github.com/commonly/runtime/shared/runs"
	"github.com/commonly/runtime/shared/sandbox"
	"github.com/commonly/runtime/shared/tablekeys"
	"github.com/commonly/runtime/shared/turns"
	"github.com/commonly/runtime/shared/utcday"
)

// onEveryShard makes ids until each of n shards has per of them.
func onEveryShard(prefix string, n, per int) []string {
	var ids []string
	count := make([]int, n)
	for i, full := 0, 0; full < n; i++ {
		id := fmt.Sprintf("%s-%04d", prefix, i)
		sh := tablekeys.Shard(id, n)
		if count[sh] == per {
			continue
		}
		ids = append(ids, id)
		if count[sh]++; count[sh] == per {
			full++
		}
	}
	return ids
}

// The sweep reads every shard of both indexes, each to its own bound: on
// the production store (the default shard count), with two abandoned
// runs and two expired sandbox records on every shard and a bound of one
// a shard, one sweep closes one run and kills one sandbox of each shard,
// and the next sweep the rest.
func TestSweepReadsEveryShardToItsOwnBound(t *testing.T) {
	r := newRig(t)
	ctx := context.Background()
	n := r.st.IndexShards()
	if n != tablekeys.DefaultIndexShards {
		t.Fatalf("the store has %d shards, want the default %d", n, tablekeys.DefaultIndexShards)
	}
	rc, err := turns.NewReclaimer(turns.ReclaimerConfig{Store: r.st, Now: r.clock.Now, Log: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	runIDs := onEveryShard("run", n, 2)
	for i, id := range runIDs {
		at := r.clock.Now().Add(time.Duration(i) * time.Millisecond)
		run := &runs.Run{RunID: id, InstallID: "inst", UserID: "user-" + id, Status: runs.StatusQueued, Day: utcday.Of(at),
			CreatedAt: at, Message: "hi", RequestHash: "h-" + id, Engine: "native", Steps: []runs.Step{}}
		if res, err := r.st.Admit(ctx, turns.Admission{Plan: turns.PlanFree, Run: run, Limit: 30, Now: at}); err != nil || !res.Admitted {
			t.Fatalf("admit %s: %+v, %v", id, res, err)
		}
	}
	sandboxIDs := onEveryShard("sbx", n, 2)
	for _, id := range sandboxIDs {
		r.record(t, id, "run-elsewhere", expiredAt.Add(-time.Minute))
	}
	r.clock.Advance(turns.RunMaxLife + time.Second)

	rp := r.reaper(t, reaper.Config{Runs: rc, RunLimit: 1, RecordLimit: 1, RunConcurrency: 8})
	for sweep, want := range []int{n, n, 0} {
		rep, err := rp.Sweep(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if rep.RunsAbandoned != want || rep.RunsInterrupted != want || rep.Recorded != want || rep.AlreadyGone != want || rep.Marked != want {
			t.Fatalf("sweep %d: %+v; want %d runs and %d records, one of each shard", sweep+1, rep, want, want)
		}
	}
	for _, id := range runIDs {
		if got, err := r.st.GetRun(ctx, id); err != nil || got.Status != runs.StatusInterrupted {
			t.Errorf("run %s: %+v, %v", id, got, err)
		}
	}
	for _, id := range sandboxIDs {
		if got := r.status(t, id); got != sandbox.StatusKilled {
			t.Errorf("sandbox %s: %q", id, got)
		}
	}
}

// gatedRegistry answers each shard's read only once every shard's read
// is in flight: a sweep that read the shards one after another would
// never get past the first, and fail with the sweep's deadline. Shard
// broken fails.
type gatedRegistry struct {
	reaper.Registry
	broken int

	mu      sync.Mutex
	waiting int
	all     chan struct{}
}

func (g *gatedRegistry) ExpiredSandboxes(ctx context.Context, shard int, bound time.Time, limit int32) ([]sandbox.Record, error) {
	g.mu.Lock()
	if g.waiting++; g.waiting == g.IndexShards() {
		close(g.all)
	}
	g.mu.Unlock()
	select {
	case <-g.all:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	if shard == g.broken {
		return nil, errors.New("ProvisionedThroughputExceededException")
	}
	return g.Registry.ExpiredSandboxes(ctx, shard, bound, limit)
}

// The shards are read side by side, and one that fails leaves the
// others' sandboxes killed: the source counts as read and as failed.
func TestShardsAreReadSideBySideAndAFailingOneStopsNoOther(t *testing.T) {
	r := newRig(t)
	n := r.st.IndexShards()
	ids := onEveryShard("sbx", n, 1)
	broken := tablekeys.Shard(ids[0], n)
	for _, id := range ids {
		r.record(t, id, "run-x", expiredAt.Add(-time.Minute))
	}
	g := &gatedRegistry{Registry: r.st, broken: broken, all: make(chan struct{})}
	rep, err := r.reaper(t, reaper.Config{Registry: g, Deadline: 5 * time.Second}).Sweep(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if rep.Cut || rep.Recorded != n-1 || rep.AlreadyGone != n-1 || rep.SourceFailures != 1 {
		t.Fatalf("report %+v; want %d records read and killed, the broken shard's source failure", rep, n-1)
	}
	if got := r.status(t, ids[0]); got != sandbox.StatusRunning {
		t.Errorf("the broken shard's sandbox is %q", got)
	}
}
