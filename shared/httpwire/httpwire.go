// Package httpwire holds the HTTP plumbing the runtime's outbound clients
// share (the credential broker, the Commonly backend, GitHub, web search,
// the Durable Object runtime, E2B): checking a configured base URL,
// building a request's URL from it and path segments that may come from a
// turn or the model, and making one JSON call (Do) whose failures are an
// *Error that keeps the status and the cause for the log while the caller
// shows its own fixed words. It depends on the standard library only.
package httpwire

import (
	"fmt"
	"net/url"
)

// IsHTTPURL reports whether u is an absolute http or https URL with a
// host: what a configured base URL must be. (url.Parse lowercases the
// scheme.)
func IsHTTPURL(u *url.URL) bool {
	return u != nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != ""
}

// SegmentError is a path segment JoinSegments refuses. Callers report it
// in their own words with Segment.
type SegmentError struct {
	Segment string
}

func (e *SegmentError) Error() string {
	return fmt.Sprintf("httpwire: %q is not a valid path segment", e.Segment)
}

// JoinSegments appends segs to base's path, each escaped as one segment:
// a "/" or "?" in a segment stays inside it. An empty, "." or ".."
// segment is refused with a *SegmentError: escaping leaves dots alone, and
// the path cleaning of JoinPath would let such a segment drop or climb
// over the one before it, to reach another endpoint. base is not changed.
func JoinSegments(base *url.URL, segs ...string) (*url.URL, error) {
	escaped := make([]string, len(segs))
	for i, s := range segs {
		if s == "" || s == "." || s == ".." {
			return nil, &SegmentError{Segment: s}
		}
		escaped[i] = url.PathEscape(s)
	}
	// JoinPath takes its arguments as already escaped.
	return base.JoinPath(escaped...), nil
}
