// Package retry is the runtime's one backoff between attempts of a call
// that may succeed later (a DynamoDB transaction conflict, unprocessed
// keys of a batch, an E2B create refused for capacity): full jitter under
// a ceiling that doubles from Base up to Max, and a wait that ends as soon
// as the caller's context does. Callers keep their own loops, attempt
// bounds and errors; only the wait is shared.
package retry

import (
	"context"
	"math"
	"math/rand/v2"
	"time"
)

// Backoff says how long to wait before each retry. The zero value waits
// nothing; Base must be set for it to wait.
type Backoff struct {
	// Base is the ceiling of the wait before the first retry; each later
	// retry doubles it.
	Base time.Duration
	// Max caps the ceiling; zero leaves it uncapped.
	Max time.Duration
	// Rand returns a uniform value in [0, n), n > 0; nil uses
	// math/rand/v2. Tests make it deterministic.
	Rand func(n int64) int64
	// Sleep waits d or until ctx is done, returning ctx.Err() then; nil
	// uses a timer. Tests record the waits instead.
	Sleep func(ctx context.Context, d time.Duration) error
}

// Ceiling is the largest wait before retry number attempt (0 is the wait
// after the first failure): Base doubled attempt times, capped at Max.
func (b Backoff) Ceiling(attempt int) time.Duration {
	if b.Base <= 0 {
		return 0
	}
	c := b.Base
	for range max(attempt, 0) {
		if c > math.MaxInt64/2 || (b.Max > 0 && c >= b.Max) {
			break
		}
		c *= 2
	}
	if b.Max > 0 {
		c = min(c, b.Max)
	}
	return c
}

// Delay draws the wait before retry number attempt: uniform in
// [0, Ceiling(attempt)), so that concurrent callers spread out.
func (b Backoff) Delay(attempt int) time.Duration {
	c := b.Ceiling(attempt)
	if c <= 0 {
		return 0
	}
	rnd := b.Rand
	if rnd == nil {
		rnd = rand.Int64N
	}
	return time.Duration(rnd(int64(c)))
}

// Wait sleeps Delay(attempt). It returns ctx.Err() without waiting when
// ctx is already done, and as soon as ctx is done during the wait.
func (b Backoff) Wait(ctx context.Context, attempt int) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	sleep := b.Sleep
	if sleep == nil {
		sleep = Sleep
	}
	return sleep(ctx, b.Delay(attempt))
}

// Sleep waits d, or until ctx is done (then it returns ctx.Err()).
func Sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
