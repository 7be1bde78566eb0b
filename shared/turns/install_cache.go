package turns

import (
	"context"
	"time"
)

// InstallCache keeps installs on a warm container for a short, stated time
// (INSTALL_CACHE_TTL): an install changes rarely and is read on every
// turn. Changes made through this container evict the entry at once; a
// change made through another container shows within the TTL.
type InstallCache struct {
	store Store
	ttl   time.Duration
	now   func() time.Time
	items boundedMap[cachedInstall]
}

type cachedInstall struct {
	in      *Install // never handed out: callers get clones
	expires time.Time
}

// NewInstallCache returns a cache over the store; a ttl of zero disables
// it. One cache serves the service and the worker of a container, so a
// turn reads its install once.
func NewInstallCache(s Store, ttl time.Duration, now func() time.Time) *InstallCache {
	if now == nil {
		now = time.Now
	}
	return &InstallCache{store: s, ttl: ttl, now: now}
}

func (c *InstallCache) cached(id string) (*Install, bool) {
	if c.ttl <= 0 {
		return nil, false
	}
	it, ok := c.items.get(id)
	if !ok || !c.now().Before(it.expires) {
		return nil, false
	}
	return it.in.Clone(), true // callers cannot change the cached value
}

func (c *InstallCache) put(in *Install) {
	if c.ttl <= 0 || in == nil {
		return
	}
	c.items.put(in.InstallID, cachedInstall{in: in.Clone(), expires: c.now().Add(c.ttl)})
}

func (c *InstallCache) evict(id string) { c.items.delete(id) }

func (c *InstallCache) get(ctx context.Context, id string) (*Install, error) {
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
