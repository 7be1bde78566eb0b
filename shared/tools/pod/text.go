package pod

import (
	"strings"
	"unicode/utf8"
)

// Bounds on what the model sends and what it is shown. Reads are capped
// so that a busy pod cannot flood the context; writes so that the model
// cannot flood the pod.
const (
	maxMessageRead   = 600
	maxContextRead   = 8000
	maxMemoryRead    = 8000
	maxMessageWrite  = 4000
	maxMemoryWrite   = 2000
	maxTitle         = 200
	maxAssignee      = 100
	maxNotes         = 4000
	maxAuthor        = 100
	defaultReadCount = 20
	maxReadCount     = 50
)

// redacted replaces a credential an upstream echoed back.
const redacted = "[redacted]"

// scrub removes the token from text the backend sent back: a backend (or
// a message someone posted) could echo it, and the model must never see it.
func scrub(s, token string) string {
	if token == "" {
		return s
	}
	return strings.ReplaceAll(s, token, redacted)
}

// head keeps the first max runes of s, marking a cut with "…".
func head(s string, max int) (string, bool) {
	if utf8.RuneCountInString(s) <= max {
		return s, false
	}
	i, n := 0, 0
	for i = range s {
		if n == max-1 {
			break
		}
		n++
	}
	return s[:i] + "…", true
}

// tail keeps the last max runes of s, marking a cut with "…".
func tail(s string, max int) (string, bool) {
	n := utf8.RuneCountInString(s)
	if n <= max {
		return s, false
	}
	skip := n - (max - 1)
	for i := range s {
		if skip == 0 {
			return "…" + s[i:], true
		}
		skip--
	}
	return "…", true
}

// runes counts characters as the model and the bounds see them.
func runes(s string) int { return utf8.RuneCountInString(s) }
