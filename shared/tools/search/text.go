package search

import "github.com/commonly/runtime/shared/textcap"

// clip keeps the first max characters of s, marking a cut with "…".
func clip(s string, max int) string {
	c, _ := textcap.Head(s, max)
	return c
}
