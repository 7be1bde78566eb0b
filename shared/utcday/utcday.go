// Package utcday is the one definition of "a day" for ceilings and cost:
// the UTC calendar day, whatever the caller's or the host's time zone.
package utcday

import "time"

// Layout is how a day is written in keys and records.
const Layout = "2006-01-02"

// Of returns the UTC day t falls on, e.g. "2026-12-02".
func Of(t time.Time) string { return t.UTC().Format(Layout) }

// Start returns the first instant of t's UTC day.
func Start(t time.Time) time.Time {
	y, m, d := t.UTC().Date()
	return time.Date(y, m, d, 0, 0, 0, 0, time.UTC)
}

// ResetsAt returns the instant the next UTC day begins, when daily
// ceilings reset.
func ResetsAt(t time.Time) time.Time { return Start(t).AddDate(0, 0, 1) }
