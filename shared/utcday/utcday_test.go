package utcday

import (
	"testing"
	"time"
)

func TestBoundaries(t *testing.T) {
	plus14 := time.FixedZone("UTC+14", 14*3600)
	minus12 := time.FixedZone("UTC-12", -12*3600)
	cases := []struct {
		name   string
		at     time.Time
		day    string
		resets time.Time
	}{
		{"last nanosecond of the day", time.Date(2026, 12, 2, 23, 59, 59, 999999999, time.UTC), "2026-12-02", time.Date(2026, 12, 3, 0, 0, 0, 0, time.UTC)},
		{"midnight starts the next day", time.Date(2026, 12, 3, 0, 0, 0, 0, time.UTC), "2026-12-03", time.Date(2026, 12, 4, 0, 0, 0, 0, time.UTC)},
		{"local zone ahead of UTC", time.Date(2026, 12, 3, 9, 0, 0, 0, plus14), "2026-12-02", time.Date(2026, 12, 3, 0, 0, 0, 0, time.UTC)},
		{"local zone behind UTC", time.Date(2026, 12, 2, 13, 0, 0, 0, minus12), "2026-12-03", time.Date(2026, 12, 4, 0, 0, 0, 0, time.UTC)},
		{"year end", time.Date(2026, 12, 31, 23, 59, 59, 0, time.UTC), "2026-12-31", time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC)},
		{"leap day", time.Date(2028, 2, 29, 12, 0, 0, 0, time.UTC), "2028-02-29", time.Date(2028, 3, 1, 0, 0, 0, 0, time.UTC)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := Of(c.at); got != c.day {
				t.Errorf("Of = %s, want %s", got, c.day)
			}
			if got := ResetsAt(c.at); !got.Equal(c.resets) {
				t.Errorf("ResetsAt = %s, want %s", got, c.resets)
			}
		})
	}
}
