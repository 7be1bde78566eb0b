package reaper

import (
	"errors"
	"fmt"
	"sync"
)

// eachShard reads shards 0 to n-1 side by side, each to its own bound
// (read's), and returns what they gave, in shard order, with their
// errors joined: a shard that fails leaves the others' results standing.
// A sweep reads a few dozen shards of each index (tablekeys/shards.go),
// so one goroutine a shard is cheap and a slow shard delays none.
func eachShard[T any](n int, read func(shard int) ([]T, error)) ([]T, error) {
	got := make([][]T, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for shard := range n {
		wg.Go(func() {
			items, err := read(shard)
			got[shard] = items
			if err != nil {
				errs[shard] = fmt.Errorf("shard %d: %w", shard, err)
			}
		})
	}
	wg.Wait()
	var all []T
	for _, items := range got {
		all = append(all, items...)
	}
	return all, errors.Join(errs...)
}
