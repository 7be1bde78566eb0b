package app

import "runtime/debug"

// GCPercent is the garbage collector's target the turn function runs
// with when GOGC is not set: a turn allocates under a megabyte and the
// process stays far below its memory, so collecting half as often saves
// about a millisecond of CPU a turn (measured in `make bench`) for a few
// MiB of heap.
const GCPercent = 200

// TuneRuntime applies GCPercent unless the environment sets GOGC.
func TuneRuntime(getenv func(string) string) {
	if getenv("GOGC") == "" {
		debug.SetGCPercent(GCPercent)
	}
}
