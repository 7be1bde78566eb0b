// Package textcap bounds text: what tools exchange with the model and
// upstream services (counted in characters, as the model and the tools'
// limits count), and what is stored or logged (counted in bytes).
// Credentials are removed from text by shared/redact.
package textcap

import (
	"unicode/utf8"
)

// Head keeps the first max characters of s, marking a cut with "…" (the
// mark counts towards max). It reports whether s was cut.
func Head(s string, max int) (string, bool) {
	if utf8.RuneCountInString(s) <= max {
		return s, false
	}
	if max <= 1 {
		return "…", true
	}
	n := 0
	for i := range s {
		if n == max-1 {
			return s[:i] + "…", true
		}
		n++
	}
	return s, false
}

// Tail keeps the last max characters of s, marking a cut with "…".
func Tail(s string, max int) (string, bool) {
	n := utf8.RuneCountInString(s)
	if n <= max {
		return s, false
	}
	if max <= 1 {
		return "…", true
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

// Len counts characters as the bounds see them.
func Len(s string) int { return utf8.RuneCountInString(s) }

// Bytes cuts s to at most n bytes without splitting a UTF-8 sequence,
// marking a cut with "…" when there is room for it. Records and log lines
// are bounded in bytes.
func Bytes(s string, n int) string {
	if len(s) <= n {
		return s
	}
	mark := "…"
	if n < len(mark) {
		mark = ""
	}
	cut := max(n-len(mark), 0)
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + mark
}
