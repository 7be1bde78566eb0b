package usage

import (
	"context"
	"sync"

	"github.com/commonly/runtime/shared/store"
	"github.com/commonly/runtime/shared/tablekeys"
)

// Index is the report index's reader (store.Dynamo).
type Index interface {
	ReportShard(ctx context.Context, day string, shard int, each func(store.UserDay) error) error
}

var _ Index = (*store.Dynamo)(nil)

// Parallel is how many shards are read at once: a shard's read is a
// chain of 1 MB pages, each a round trip, so the report's time is the
// pages' latency divided by it.
const Parallel = 16

// Build reads every user-day of cfg's days from the index and returns
// the report: tablekeys.ReportShards Queries a day, their pages read
// Parallel at a time, never the runs.
func Build(ctx context.Context, ix Index, cfg Config) (*Report, error) {
	b := NewBuilder(cfg)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		mu       sync.Mutex
		firstErr error
		wg       sync.WaitGroup
	)
	slots := make(chan struct{}, Parallel)
	for _, day := range cfg.Days() {
		for shard := range tablekeys.ReportShards {
			slots <- struct{}{}
			wg.Add(1)
			go func() {
				defer func() { <-slots; wg.Done() }()
				var got []store.UserDay
				err := ix.ReportShard(ctx, day, shard, func(u store.UserDay) error { got = append(got, u); return nil })
				mu.Lock()
				defer mu.Unlock()
				if err != nil {
					if firstErr == nil {
						firstErr = err
						cancel()
					}
					return
				}
				for _, u := range got {
					b.Add(u)
				}
			}()
		}
	}
	wg.Wait()
	if firstErr != nil {
		return nil, firstErr
	}
	return b.Report(), nil
}
