package turns

import (
	"context"
	"sync"
	"time"

	"github.com/commonly/runtime/shared/install"
)

// installCache keeps installs on a warm container for a short, stated time
// (Config.InstallCacheTTL): an install changes rarely and is read on every
// turn. Changes made through this container evict the entry at once; a
// change made through another container shows within the TTL.
type installCache struct {
	mu    sync.Mutex
	store Store
	ttl   time.Duration
	now   func() time.Time
	items map[string]cachedInstall
}

type cachedInstall struct {
	in      install.Install
	expires time.Time
}

func newInstallCache(s Store, ttl time.Duration, now func() time.Time) *installCache {
	return &installCache{store: s, ttl: ttl, now: now, items: map[string]cachedInstall{}}
}

func (c *installCache) cached(id string) (*install.Install, bool) {
	if c.ttl <= 0 {
		return nil, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	it, ok := c.items[id]
	if !ok || !c.now().Before(it.expires) {
		return nil, false
	}
	in := it.in // a copy: callers cannot change the cached value
	return &in, true
}

func (c *installCache) put(in *install.Install) {
	if c.ttl <= 0 || in == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.items) > 10000 { // bound memory on a long-lived container
		clear(c.items)
	}
	c.items[in.InstallID] = cachedInstall{in: *in, expires: c.now().Add(c.ttl)}
}

func (c *installCache) evict(id string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.items, id)
}

func (c *installCache) get(ctx context.Context, id string) (*install.Install, error) {
	if in, ok := c.cached(id); ok {
		return in, nil
	}
	in, err := c.store.GetInstall(ctx, id)
	if err != nil {
		return nil, err
	}
	c.put(in)
	return in, nil
}
