package search

import "unicode/utf8"

// clip keeps the first max runes of s, marking a cut with "…".
func clip(s string, max int) string {
	if utf8.RuneCountInString(s) <= max {
		return s
	}
	n := 0
	for i := range s {
		if n == max-1 {
			return s[:i] + "…"
		}
		n++
	}
	return s
}

func runeCount(s string) int { return utf8.RuneCountInString(s) }
