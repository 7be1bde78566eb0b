package reaper_test

import (
	"testing"
	"time"

	"github.com/commonly/runtime/shared/reaper"
)

// The one decision, at its boundaries: killed at exactly lifetime +
// grace after the start, never a nanosecond before, whatever the
// lifetime; a sandbox without a known start is never killed.
func TestExpired(t *testing.T) {
	now := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	const life, grace = 180 * time.Second, 15 * time.Second
	tests := []struct {
		name            string
		started         time.Time
		lifetime, grace time.Duration
		want            bool
	}{
		{"exactly lifetime + grace ago", now.Add(-life - grace), life, grace, true},
		{"a nanosecond younger", now.Add(-life - grace + time.Nanosecond), life, grace, false},
		{"a nanosecond older", now.Add(-life - grace - time.Nanosecond), life, grace, true},
		{"past its lifetime, within the grace", now.Add(-life - time.Second), life, grace, false},
		{"just started", now, life, grace, false},
		{"an hour old (an extended timeout)", now.Add(-time.Hour), life, grace, true},
		{"started in the future (a clock ahead)", now.Add(time.Minute), life, grace, false},
		{"no grace: at the lifetime", now.Add(-life), life, 0, true},
		{"a longer lifetime: 4 min old", now.Add(-4 * time.Minute), 5 * time.Minute, grace, false},
		{"a longer lifetime: past it", now.Add(-5*time.Minute - grace), 5 * time.Minute, grace, true},
		{"no start known", time.Time{}, life, grace, false},
	}
	for _, tt := range tests {
		if got := reaper.Expired(tt.started, now, tt.lifetime, tt.grace); got != tt.want {
			t.Errorf("%s: Expired = %v, want %v", tt.name, got, tt.want)
		}
	}
}
