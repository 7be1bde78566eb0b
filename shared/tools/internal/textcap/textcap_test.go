package textcap

import "testing"

func TestHeadTail(t *testing.T) {
	cases := []struct {
		in        string
		max       int
		head, tl  string
		truncated bool
	}{
		{"hello", 5, "hello", "hello", false},
		{"hello", 4, "hel…", "…llo", true},
		{"héllo wörld", 6, "héllo…", "…wörld", true},
		{"ab", 1, "…", "…", true},
		{"", 3, "", "", false},
	}
	for _, c := range cases {
		h, cut := Head(c.in, c.max)
		tl, cut2 := Tail(c.in, c.max)
		if h != c.head || tl != c.tl || cut != c.truncated || cut2 != c.truncated {
			t.Errorf("%q/%d: head %q tail %q cut %v/%v", c.in, c.max, h, tl, cut, cut2)
		}
		if Len(h) > max(c.max, 1) || Len(tl) > max(c.max, 1) {
			t.Errorf("%q/%d: result longer than the bound", c.in, c.max)
		}
	}
}

func TestScrub(t *testing.T) {
	if got := Scrub("token abc and abc", "abc"); got != "token [redacted] and [redacted]" {
		t.Errorf("Scrub = %q", got)
	}
	if got := Scrub("nothing", ""); got != "nothing" {
		t.Errorf("empty secret changed the text: %q", got)
	}
}
