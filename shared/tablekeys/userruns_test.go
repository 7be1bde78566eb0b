package tablekeys

import (
	"encoding/base64"
	"testing"
	"time"
)

// TestUserRunsSort: the user-runs index's sort value orders admissions
// as time does, so a backwards Query is newest first.
func TestUserRunsSort(t *testing.T) {
	cases := []struct {
		name           string
		earlier, later time.Time
	}{
		{"a nanosecond apart", time.Date(2026, 12, 2, 9, 59, 59, 999_999_999, time.UTC), time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)},
		{"fractions that RFC 3339 would trim", time.Date(2026, 12, 2, 9, 59, 59, 5_000_000, time.UTC), time.Date(2026, 12, 2, 9, 59, 59, 40_000_000, time.UTC)},
		{"another zone", time.Date(2026, 12, 2, 10, 30, 0, 0, time.FixedZone("CET", 3600)), time.Date(2026, 12, 2, 9, 31, 0, 0, time.UTC)},
		{"across a year", time.Date(2026, 12, 31, 23, 59, 59, 0, time.UTC), time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC)},
	}
	for _, c := range cases {
		a, b := UserRunsSort(c.earlier), UserRunsSort(c.later)
		if !(a < b) || len(a) != len(b) {
			t.Errorf("%s: %q must sort before %q, at the same width", c.name, a, b)
		}
		if back, err := ParseSort(a); err != nil || !back.Equal(c.earlier) {
			t.Errorf("%s: ParseSort(%q) = %s, %v", c.name, a, back, err)
		}
	}
}

// TestUserRunsCursor: a cursor reads back as the key it was made from,
// and nothing else is taken for one.
func TestUserRunsCursor(t *testing.T) {
	sort := UserRunsSort(time.Date(2026, 12, 2, 9, 0, 0, 1, time.UTC))
	c := UserRunsCursor(sort, "run_0a1b")
	if s, id, ok := ParseUserRunsCursor(c); !ok || s != sort || id != "run_0a1b" {
		t.Errorf("ParseUserRunsCursor(%q) = %q, %q, %v", c, s, id, ok)
	}
	raw := func(s string) string { return base64.RawURLEncoding.EncodeToString([]byte(s)) }
	bad := map[string]string{
		"empty":                     "",
		"not base64url":             "a+b/c",
		"padded":                    UserRunsCursor(sort, "run_1") + "=",
		"no separator":              raw(sort),
		"empty run":                 raw(sort + "#"),
		"run breaking the id rule":  raw(sort + "#run\x00"),
		"run with a separator":      raw(sort + "#run#2"),
		"a time not from the index": raw("2026-12-02T09:00:00Z#run_1"),
		"no time":                   raw("#run_1"),
	}
	for name, cursor := range bad {
		if s, id, ok := ParseUserRunsCursor(cursor); ok {
			t.Errorf("%s: %q read as %q, %q", name, cursor, s, id)
		}
	}
}
