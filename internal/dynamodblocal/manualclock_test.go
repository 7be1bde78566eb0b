package dynamodblocal

import (
	"sync"
	"time"
)

// ManualClock is a Clock that moves only when Advance is called, for
// tests: a test waits with WaitForTimers until the code under test is
// waiting on the clock, then advances it, with no sleeps.
type ManualClock struct {
	mu     sync.Mutex
	cond   *sync.Cond
	now    time.Time
	timers map[*manualTimer]struct{}
}

// NewManualClock returns a ManualClock reading now.
func NewManualClock(now time.Time) *ManualClock {
	c := &ManualClock{now: now, timers: map[*manualTimer]struct{}{}}
	c.cond = sync.NewCond(&c.mu)
	return c
}

// Now returns the clock's time.
func (c *ManualClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// NewTimer returns a timer firing when the clock reaches now+d (at once if
// d <= 0).
func (c *ManualClock) NewTimer(d time.Duration) Timer {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := &manualTimer{clock: c, at: c.now.Add(d), ch: make(chan time.Time, 1)}
	if d <= 0 {
		t.ch <- c.now
		return t
	}
	c.timers[t] = struct{}{}
	c.cond.Broadcast()
	return t
}

// Advance moves the clock by d and fires the timers that are due.
func (c *ManualClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
	for t := range c.timers {
		if !t.at.After(c.now) {
			delete(c.timers, t)
			t.ch <- c.now
		}
	}
}

// WaitForTimers blocks until at least n timers are pending (created, not
// yet fired or stopped).
func (c *ManualClock) WaitForTimers(n int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for len(c.timers) < n {
		c.cond.Wait()
	}
}

type manualTimer struct {
	clock *ManualClock
	at    time.Time
	ch    chan time.Time
}

func (t *manualTimer) C() <-chan time.Time { return t.ch }

func (t *manualTimer) Stop() bool {
	t.clock.mu.Lock()
	defer t.clock.mu.Unlock()
	_, pending := t.clock.timers[t]
	delete(t.clock.timers, t)
	return pending
}
