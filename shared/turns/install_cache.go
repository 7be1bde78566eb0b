package turns

import (
	"context"
	"errors"
	"fmt"
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

// InstallCacheConfig configures an InstallCache.
type InstallCacheConfig struct {
	// Store is required.
	Store Store
	// TTL is how long an install read is reused (INSTALL_CACHE_TTL);
	// zero turns the cache off, so every turn reads the install.
	TTL time.Duration
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// NewInstallCache checks cfg. One cache serves the service and the worker
// of a container, so a turn reads its install once.
func NewInstallCache(cfg InstallCacheConfig) (*InstallCache, error) {
	if cfg.Store == nil {
		return nil, errors.New("turns: the install cache needs a store")
	}
	if cfg.TTL < 0 {
		return nil, fmt.Errorf("turns: install cache TTL %v is negative", cfg.TTL)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &InstallCache{store: cfg.Store, ttl: cfg.TTL, now: cfg.Now}, nil
}

// uncached is the cache of a service or worker given none: every read
// goes to the store.
func uncached(s Store) *InstallCache { return &InstallCache{store: s, now: time.Now} }

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
