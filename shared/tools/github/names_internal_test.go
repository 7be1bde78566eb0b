package github

import (
	"regexp"
	"strings"
	"testing"
)

// TestNameRulesMatchTheirRegexps checks the hand-written name checks
// against the regexps they replace, which stay here as their spec.
func TestNameRulesMatchTheirRegexps(t *testing.T) {
	owner := regexp.MustCompile(`^[A-Za-z0-9](?:[A-Za-z0-9-]{0,38})$`)
	repo := regexp.MustCompile(`^[A-Za-z0-9._-]{1,100}$`)
	inputs := []string{
		"", "a", "-", "a-", "-a", "octo-cat", "octo_cat", "octo.cat", "Octo9", "é", "a b", "a\n", "a/b", "..", ".",
		strings.Repeat("a", 38), strings.Repeat("a", 39), strings.Repeat("a", 40),
		strings.Repeat("r", 99), strings.Repeat("r", 100), strings.Repeat("r", 101), "x" + strings.Repeat("-", 38),
	}
	for c := 0; c < 256; c++ {
		inputs = append(inputs, string([]byte{byte(c)}), "a"+string([]byte{byte(c)}))
	}
	for _, in := range inputs {
		if got, want := validOwner(in), owner.MatchString(in); got != want {
			t.Errorf("validOwner(%q) = %v, the regexp says %v", in, got, want)
		}
		if got, want := validRepo(in), repo.MatchString(in); got != want {
			t.Errorf("validRepo(%q) = %v, the regexp says %v", in, got, want)
		}
	}
}
