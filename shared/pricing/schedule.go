package pricing

import (
	"fmt"
	"strings"
	"time"
)

// schedule is one version of a named peak schedule: the instants that
// fall in any of its windows are peak, the rest off-peak.
type schedule struct {
	from    time.Time
	windows []window
}

// window is a peak window [from, to) in minutes of the day, on the
// calendar of a fixed UTC offset. Fixed offsets rather than IANA zones:
// providers publish their hours in UTC or in Beijing time (no daylight
// saving), and Lambda's minimal images carry no tz database.
type window struct {
	zone     *time.Location
	days     [7]bool // indexed by time.Weekday; all true when the file names none
	from, to int     // minutes since local midnight, to ≤ 24*60
}

const (
	minutesPerDay  = 24 * 60
	minutesPerWeek = 7 * minutesPerDay
)

// peak reports whether t falls in one of the windows. Windows start on
// whole minutes, so 00:59:59 is before a 01:00 window and 01:00:00 in it.
func (s *schedule) peak(t time.Time) bool {
	for _, w := range s.windows {
		lt := t.In(w.zone)
		if !w.days[lt.Weekday()] {
			continue
		}
		if m := lt.Hour()*60 + lt.Minute(); m >= w.from && m < w.to {
			return true
		}
	}
	return false
}

var weekdays = map[string]time.Weekday{
	"Sun": time.Sunday, "Mon": time.Monday, "Tue": time.Tuesday, "Wed": time.Wednesday,
	"Thu": time.Thursday, "Fri": time.Friday, "Sat": time.Saturday,
}

func parseSchedule(fs fileSchedule) (schedule, error) {
	from, err := parseInstant(fs.EffectiveFrom)
	if err != nil {
		return schedule{}, err
	}
	if len(fs.Peak) == 0 {
		return schedule{}, fmt.Errorf("effective %s: no peak windows (a model without peak hours is priced flat)", fs.EffectiveFrom)
	}
	s := schedule{from: from}
	// The week in UTC minutes: each window marks the minutes it covers, so
	// that windows written in different offsets are compared exactly.
	var week [minutesPerWeek]bool
	for i, fw := range fs.Peak {
		w, err := parseWindow(fw)
		if err != nil {
			return schedule{}, fmt.Errorf("effective %s: peak[%d]: %w", fs.EffectiveFrom, i, err)
		}
		_, offset := time.Unix(0, 0).In(w.zone).Zone()
		for d := range 7 {
			if !w.days[d] {
				continue
			}
			for m := w.from; m < w.to; m++ {
				utc := ((d*minutesPerDay+m-offset/60)%minutesPerWeek + minutesPerWeek) % minutesPerWeek
				if week[utc] {
					return schedule{}, fmt.Errorf("effective %s: peak[%d] overlaps an earlier window", fs.EffectiveFrom, i)
				}
				week[utc] = true
			}
		}
		s.windows = append(s.windows, w)
	}
	return s, nil
}

func parseWindow(fw fileWindow) (window, error) {
	zone, err := parseOffset(fw.UTCOffset)
	if err != nil {
		return window{}, err
	}
	w := window{zone: zone}
	if w.from, err = parseClock(fw.From); err != nil {
		return window{}, fmt.Errorf("from: %w", err)
	}
	if w.to, err = parseClock(fw.To); err != nil {
		return window{}, fmt.Errorf("to: %w", err)
	}
	if w.from >= w.to {
		return window{}, fmt.Errorf("from %s is not before to %s (split a window that crosses midnight in two)", fw.From, fw.To)
	}
	if len(fw.Days) == 0 {
		for d := range w.days {
			w.days[d] = true
		}
		return w, nil
	}
	for _, name := range fw.Days {
		d, ok := weekdays[name]
		if !ok {
			return window{}, fmt.Errorf("day %q is not one of Mon Tue Wed Thu Fri Sat Sun", name)
		}
		if w.days[d] {
			return window{}, fmt.Errorf("day %s given twice", name)
		}
		w.days[d] = true
	}
	return w, nil
}

// parseOffset reads "+08:00" or "-05:30".
func parseOffset(s string) (*time.Location, error) {
	if len(s) != 6 || (s[0] != '+' && s[0] != '-') || s[3] != ':' {
		return nil, fmt.Errorf("utcOffset %q is not ±HH:MM", s)
	}
	h, okH := twoDigits(s[1:3])
	m, okM := twoDigits(s[4:6])
	if !okH || !okM || h > 14 || m > 59 {
		return nil, fmt.Errorf("utcOffset %q is not ±HH:MM", s)
	}
	secs := (h*60 + m) * 60
	if s[0] == '-' {
		secs = -secs
	}
	return time.FixedZone("UTC"+s, secs), nil
}

// parseClock reads "HH:MM" as minutes since midnight; "24:00" is the end
// of the day.
func parseClock(s string) (int, error) {
	hh, mm, ok := strings.Cut(s, ":")
	h, okH := twoDigits(hh)
	m, okM := twoDigits(mm)
	if !ok || !okH || !okM {
		return 0, fmt.Errorf("%q is not HH:MM", s)
	}
	if m > 59 || h*60+m > minutesPerDay {
		return 0, fmt.Errorf("%q is not a time of day between 00:00 and 24:00", s)
	}
	return h*60 + m, nil
}

// twoDigits reads exactly two ASCII digits (strconv would take "+1").
func twoDigits(s string) (int, bool) {
	if len(s) != 2 || s[0] < '0' || s[0] > '9' || s[1] < '0' || s[1] > '9' {
		return 0, false
	}
	return int(s[0]-'0')*10 + int(s[1]-'0'), true
}

func parseInstant(s string) (time.Time, error) {
	if s == "" {
		return time.Time{}, fmt.Errorf("effectiveFrom missing")
	}
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("effectiveFrom %q is not an RFC 3339 instant", s)
	}
	return t.UTC(), nil
}
