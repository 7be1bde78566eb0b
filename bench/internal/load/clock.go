package load

import "time"

// Clock is a clock running Speed times faster than the wall from its
// start: the stack's Now. Durations the code waits on (timeouts, the
// reaper's ticker) stay wall time; what is compared with timestamps
// (a run's age, a sandbox's lifetime, the UTC day) passes Speed times
// faster.
type Clock struct {
	start time.Time
	speed float64
}

// NewClock starts a clock at the wall's now.
func NewClock(speed float64) *Clock {
	if speed < 1 {
		speed = 1
	}
	return &Clock{start: time.Now(), speed: speed}
}

// Now is the clock's time.
func (c *Clock) Now() time.Time {
	wall := time.Since(c.start)
	return c.start.Add(time.Duration(float64(wall) * c.speed))
}

// Wall is how long the wall takes for d of the clock's time.
func (c *Clock) Wall(d time.Duration) time.Duration {
	return time.Duration(float64(d) / c.speed)
}

// Of is how much of the clock's time passes in wall time d.
func (c *Clock) Of(wall time.Duration) time.Duration {
	return time.Duration(float64(wall) * c.speed)
}
