package turns

import "sync"

// maxCached bounds each per-container cache: a long-lived container serving
// many users starts a full cache again empty rather than grow without end.
const maxCached = 10000

// boundedMap is a string-keyed map safe for concurrent use, holding at
// most maxCached entries.
type boundedMap[V any] struct {
	mu sync.Mutex
	m  map[string]V
}

func (b *boundedMap[V]) get(key string) (V, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	v, ok := b.m[key]
	return v, ok
}

func (b *boundedMap[V]) put(key string, v V) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.m == nil || len(b.m) >= maxCached {
		b.m = make(map[string]V)
	}
	b.m[key] = v
}

func (b *boundedMap[V]) delete(key string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.m, key)
}
