package textcap

import (
	"strings"
	"testing"
	"unicode/utf8"
)

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

func TestBytes(t *testing.T) {
	if got := Bytes("short", 10); got != "short" {
		t.Fatalf("%q", got)
	}
	s := strings.Repeat("é", 10) // 20 bytes
	got := Bytes(s, 9)
	if len(got) > 9 || !utf8.ValidString(got) || !strings.HasSuffix(got, "…") {
		t.Fatalf("Bytes = %q (%d bytes)", got, len(got))
	}
	if got := Bytes(strings.Repeat("a", 2001), 2000); len(got) != 2000 {
		t.Fatalf("len %d", len(got))
	}
}

func TestBytesKeepsUTF8(t *testing.T) {
	s := "ééééé" // 10 bytes
	for n := 0; n <= 10; n++ {
		got := Bytes(s, n)
		if len(got) > n && len(s) > n {
			t.Errorf("Bytes(%d) = %d bytes", n, len(got))
		}
		for _, r := range got {
			if r == '\uFFFD' {
				t.Errorf("Bytes(%d) split a rune: %q", n, got)
			}
		}
	}
}
