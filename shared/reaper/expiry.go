package reaper

import "time"

// Expired is the one decision on a sandbox: started at started, is it
// past lifetime plus grace at now? It reads only the start, never the
// provider's own end time: a timeout extended by mistake must not keep a
// sandbox alive, and a sandbox younger than its lifetime is never killed,
// whatever else a source says of it.
func Expired(started, now time.Time, lifetime, grace time.Duration) bool {
	if started.IsZero() {
		// No start known: nothing proves it old enough.
		return false
	}
	return !now.Before(started.Add(lifetime + grace))
}
