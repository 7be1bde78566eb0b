package tablekeys

import (
	"strings"
	"testing"
	"time"
)

func TestUsageKeyAcrossMidnight(t *testing.T) {
	cases := []struct {
		at   time.Time
		want Key
	}{
		{time.Date(2026, 12, 2, 23, 59, 59, 999999999, time.UTC), Key{"USER#u1", "DAY#2026-12-02"}},
		{time.Date(2026, 12, 3, 0, 0, 0, 0, time.UTC), Key{"USER#u1", "DAY#2026-12-03"}},
		{time.Date(2026, 12, 3, 1, 0, 0, 0, time.FixedZone("CET", 3600)), Key{"USER#u1", "DAY#2026-12-03"}},
		{time.Date(2026, 12, 3, 0, 59, 0, 0, time.FixedZone("CET", 3600)), Key{"USER#u1", "DAY#2026-12-02"}},
	}
	for _, c := range cases {
		if got := Usage("u1", c.at); got != c.want {
			t.Errorf("Usage(%s) = %v, want %v", c.at, got, c.want)
		}
	}
}

func TestKeysAreDistinct(t *testing.T) {
	all := []Key{Install("x"), Plan("x"), Usage("x", time.Unix(0, 0)), Ledger("x", "1970-01-01"), Idempotency("x", "x", "x"), Sandbox("x")}
	seen := map[Key]bool{}
	for _, k := range all {
		if seen[k] {
			t.Fatalf("duplicate key %v", k)
		}
		seen[k] = true
	}
}

func TestIdempotencyScoping(t *testing.T) {
	a := Idempotency("alice", "i1", "k")
	cases := map[string]Key{
		"other caller":  Idempotency("bob", "i1", "k"),
		"other install": Idempotency("alice", "i2", "k"),
		"other key":     Idempotency("alice", "i1", "k2"),
	}
	for name, k := range cases {
		if k == a {
			t.Errorf("%s collides with the original key", name)
		}
	}
	long := Idempotency("alice", "i1", strings.Repeat("x", 10000))
	if len(long.PK) > 300 {
		t.Errorf("long client key not hashed: %d bytes", len(long.PK))
	}
}

// TestValidID: an id from a path or a body is refused when it could not be
// a DynamoDB key (invalid UTF-8), could climb a path ("." and ".."), could
// forge another key ('#'), or could show a reader something other than
// what it is (control, format and bidirectional characters).
func TestValidID(t *testing.T) {
	cases := map[string]bool{
		"inst_123":                         true,
		"ünïcode-ok":                       true,
		"名前-🙂":                             true,
		"a.b":                              true,
		"...":                              true,
		".a":                               true,
		"a..":                              true,
		"with space":                       true,
		"\ufffd":                           true, // the character itself is valid UTF-8
		"":                                 false,
		".":                                false,
		"..":                               false,
		"a#b":                              false,
		"tab\tin":                          false,
		"\x00":                             false,
		"\x1f":                             false,
		"\x7f":                             false,
		"nel\u0085":                        false, // C1 control
		"\xff":                             false, // not UTF-8
		"a\xffb":                           false,
		"\xe2\x80":                         false, // truncated sequence
		"\xc0\xaf":                         false, // overlong '/'
		"\xed\xa0\x80":                     false, // a surrogate
		"abc\u202efdp.exe":                 false, // right-to-left override
		"\u2066iso\u2069":                  false, // isolates
		"rlm\u200f":                        false, // right-to-left mark
		"zero\u200bwidth":                  false,
		"\ufeffbom":                        false,
		"soft\u00adhyphen":                 false,
		"line\u2028sep":                    false,
		strings.Repeat("a", 128):           true,
		strings.Repeat("a", 129):           false,
		strings.Repeat("é", 64):            true,  // 128 bytes
		strings.Repeat("a", 127) + "é":     false, // 129 bytes
		strings.Repeat("a", 125) + "🙂"[:3]: false, // 128 bytes, the last rune cut
	}
	for id, want := range cases {
		if got := ValidID(id); got != want {
			t.Errorf("ValidID(%q) = %v, want %v", id, got, want)
		}
	}
}

func TestLiveSortOrdersChronologically(t *testing.T) {
	a := LiveSort(time.Date(2026, 12, 2, 9, 59, 59, 0, time.UTC))
	b := LiveSort(time.Date(2026, 12, 2, 10, 0, 0, 0, time.FixedZone("X", 3600)))
	if !(a > b) { // b is 09:00 UTC
		t.Errorf("expected %s > %s", a, b)
	}
	whole := LiveSort(time.Date(2026, 12, 2, 9, 59, 59, 0, time.UTC))
	half := LiveSort(time.Date(2026, 12, 2, 9, 59, 59, 500_000_000, time.UTC))
	if !(whole < half) {
		t.Errorf("fractions must sort after the whole second: %s vs %s", whole, half)
	}
}

func TestExpiresAfterDayCountsFromTheEndOfTheUTCDay(t *testing.T) {
	end := time.Date(2026, 12, 3, 0, 0, 0, 0, time.UTC).Add(Retention).Unix()
	cases := map[string]time.Time{
		"first instant of the day": time.Date(2026, 12, 2, 0, 0, 0, 0, time.UTC),
		"last instant of the day":  time.Date(2026, 12, 2, 23, 59, 59, 999999999, time.UTC),
		"a zone ahead of UTC":      time.Date(2026, 12, 3, 9, 0, 0, 0, time.FixedZone("UTC+14", 14*3600)),
	}
	for name, at := range cases {
		if got := ExpiresAfterDay(at); got != end {
			t.Errorf("%s: ExpiresAfterDay(%s) = %d, want %d", name, at, got, end)
		}
	}
	if next := ExpiresAfterDay(time.Date(2026, 12, 3, 0, 0, 0, 0, time.UTC)); next != end+86400 {
		t.Errorf("midnight starts the next day: got %d, want %d", next, end+86400)
	}
}

func TestLedgerKey(t *testing.T) {
	cases := []struct {
		user, day string
		want      Key
	}{
		{"u1", "2026-12-02", Key{"USER#u1", "LEDGER#2026-12-02"}},
		{"u1", "2026-12-03", Key{"USER#u1", "LEDGER#2026-12-03"}},
		{"user_with-dashes", "2028-02-29", Key{"USER#user_with-dashes", "LEDGER#2028-02-29"}},
	}
	for _, c := range cases {
		if got := Ledger(c.user, c.day); got != c.want {
			t.Errorf("Ledger(%s, %s) = %v, want %v", c.user, c.day, got, c.want)
		}
		// Beside the day's usage item, in the same partition, never on it.
		usage := UsageOnDay(c.user, c.day)
		if got := Ledger(c.user, c.day); got.PK != usage.PK || got.SK == usage.SK {
			t.Errorf("Ledger %v vs usage %v: want the same partition, another sort key", got, usage)
		}
	}
}

// TestPlanKey: a plan is alone in a partition of its own, never a
// user's (USER#), whatever a valid id is: IAM's dynamodb:LeadingKeys sees
// the partition key only, and a role that writes users' days and ledgers
// (the alarm's) must not be able to write a plan.
func TestPlanKey(t *testing.T) {
	long := strings.Repeat("a", MaxIDBytes)
	cases := []struct {
		user string
		want Key
	}{
		{"u1", Key{"PLAN#u1", "PLAN"}},
		{"a", Key{"PLAN#a", "PLAN"}},
		{long, Key{"PLAN#" + long, "PLAN"}},
		{"名前-🙂", Key{"PLAN#名前-🙂", "PLAN"}},
		{"USER", Key{"PLAN#USER", "PLAN"}},
		{"PLAN", Key{"PLAN#PLAN", "PLAN"}},
		{"...", Key{"PLAN#...", "PLAN"}},
	}
	for _, c := range cases {
		if !ValidID(c.user) {
			t.Fatalf("%q: the case must be a valid id", c.user)
		}
		got := Plan(c.user)
		if got != c.want {
			t.Errorf("Plan(%q) = %v, want %v", c.user, got, c.want)
		}
		// No user's day, ledger or install shares the plan's partition.
		for _, o := range cases {
			for _, k := range []Key{UsageOnDay(o.user, "2026-12-04"), Ledger(o.user, "2026-12-04"), Install(o.user), Sandbox(o.user)} {
				if k.PK == got.PK {
					t.Errorf("Plan(%q) shares its partition with %v", c.user, k)
				}
			}
		}
	}
}

// TestLegacyPlanUser: the migration recognises the old plan key of any
// valid user id, and nothing else of a user's partition or of another
// kind: a day, a ledger, the new plan key, an install.
func TestLegacyPlanUser(t *testing.T) {
	for _, id := range []string{"u1", strings.Repeat("a", MaxIDBytes), "名前-🙂", "PLAN", "..."} {
		if got, ok := LegacyPlanUser(LegacyPlan(id)); !ok || got != id {
			t.Errorf("LegacyPlanUser(LegacyPlan(%q)) = %q, %v", id, got, ok)
		}
		if LegacyPlan(id).PK != UsageOnDay(id, "2026-12-04").PK {
			t.Errorf("LegacyPlan(%q) is not in the user's partition", id)
		}
	}
	for _, k := range []Key{
		Plan("u1"), UsageOnDay("u1", "2026-12-04"), Ledger("u1", "2026-12-04"), Install("u1"),
		{"USER#", "PLAN"}, {"USER#a#b", "PLAN"}, {"USER#" + strings.Repeat("a", MaxIDBytes+1), "PLAN"},
		{"USER#u1", "plan"}, {"user#u1", "PLAN"}, {"USER#u1", "PLAN#"},
	} {
		if id, ok := LegacyPlanUser(k); ok {
			t.Errorf("LegacyPlanUser(%v) = %q, want not an old plan key", k, id)
		}
	}
}

// TestOpenSort: the open index's sort value orders admissions as time
// does, whatever the zone or the fraction of a second, and reads back as
// the instant it was made from.
func TestOpenSort(t *testing.T) {
	cases := []struct {
		name           string
		earlier, later time.Time
	}{
		{"a second apart", time.Date(2026, 12, 2, 9, 59, 59, 0, time.UTC), time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)},
		{"a nanosecond apart", time.Date(2026, 12, 2, 9, 59, 59, 999_999_999, time.UTC), time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)},
		{"a whole second before its fractions", time.Date(2026, 12, 2, 9, 59, 59, 0, time.UTC), time.Date(2026, 12, 2, 9, 59, 59, 100_000_000, time.UTC)},
		{"fractions that RFC 3339 would trim", time.Date(2026, 12, 2, 9, 59, 59, 5_000_000, time.UTC), time.Date(2026, 12, 2, 9, 59, 59, 40_000_000, time.UTC)},
		{"another zone", time.Date(2026, 12, 2, 10, 30, 0, 0, time.FixedZone("CET", 3600)), time.Date(2026, 12, 2, 9, 31, 0, 0, time.UTC)},
		{"across midnight and a year", time.Date(2026, 12, 31, 23, 59, 59, 0, time.UTC), time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC)},
	}
	for _, c := range cases {
		a, b := OpenSort(c.earlier), OpenSort(c.later)
		if !(a < b) || len(a) != len(b) {
			t.Errorf("%s: %q must sort before %q, at the same width", c.name, a, b)
		}
		for _, at := range []time.Time{c.earlier, c.later} {
			back, err := ParseSort(OpenSort(at))
			if err != nil || !back.Equal(at) || back.Location() != time.UTC {
				t.Errorf("%s: ParseSort(OpenSort(%s)) = %s, %v", c.name, at, back, err)
			}
		}
	}
	if OpenSort(time.Date(2026, 12, 2, 9, 0, 0, 0, time.UTC)) != LiveSort(time.Date(2026, 12, 2, 9, 0, 0, 0, time.UTC)) {
		t.Error("the two indexes' sort values differ in form")
	}
	if _, err := ParseSort("2026-12-02T09:00:00Z"); err == nil {
		t.Error("a value not written by OpenSort was read")
	}
}
