package httpwire

import (
	"errors"
	"net/url"
	"testing"
)

func TestJoinSegments(t *testing.T) {
	cases := []struct {
		base string
		segs []string
		want string // "" when refused
		bad  string // the refused segment
	}{
		{"https://api.test", []string{"v1", "users", "u1", "tokens"}, "https://api.test/v1/users/u1/tokens", ""},
		{"https://api.test/prefix", []string{"v1", "x"}, "https://api.test/prefix/v1/x", ""},
		{"http://127.0.0.1:8080", []string{"search"}, "http://127.0.0.1:8080/search", ""},
		// A segment stays one segment: separators and query marks are escaped.
		{"https://api.test", []string{"users", "a/b"}, "https://api.test/users/a%2Fb", ""},
		{"https://api.test", []string{"users", "a?x=1#f"}, "https://api.test/users/a%3Fx=1%23f", ""},
		{"https://api.test", []string{"users", "../admin"}, "https://api.test/users/..%2Fadmin", ""},
		{"https://api.test", []string{"users", "a b", "é"}, "https://api.test/users/a%20b/%C3%A9", ""},
		// Dots inside a name are a name.
		{"https://api.test", []string{"repos", "o", "my.repo", "..x"}, "https://api.test/repos/o/my.repo/..x", ""},
		// Refused: path cleaning would drop or climb over them.
		{"https://api.test", []string{"users", ".", "tokens"}, "", "."},
		{"https://api.test", []string{"users", "..", "admin"}, "", ".."},
		{"https://api.test", []string{"users", "", "tokens"}, "", ""},
	}
	for _, c := range cases {
		base, err := url.Parse(c.base)
		if err != nil {
			t.Fatal(err)
		}
		before := base.String()
		u, err := JoinSegments(base, c.segs...)
		if base.String() != before {
			t.Errorf("%v: base changed to %s", c.segs, base)
		}
		if c.want == "" {
			bad, ok := errors.AsType[*SegmentError](err)
			if !ok || bad.Segment != c.bad || u != nil {
				t.Errorf("%v: JoinSegments = %v, %v; want a refusal of %q", c.segs, u, err, c.bad)
			}
			continue
		}
		if err != nil {
			t.Errorf("%v: %v", c.segs, err)
			continue
		}
		if got := u.String(); got != c.want {
			t.Errorf("%v: got %s, want %s", c.segs, got, c.want)
		}
	}
}

func TestSegmentErrorText(t *testing.T) {
	if got := (&SegmentError{Segment: ".."}).Error(); got != `httpwire: ".." is not a valid path segment` {
		t.Errorf("Error() = %q", got)
	}
}

func TestIsHTTPURL(t *testing.T) {
	cases := map[string]bool{
		"https://api.test":          true,
		"http://127.0.0.1:8080/v1":  true,
		"HTTPS://API.test":          true,
		"https://user@api.test/x?y": true,
		"ftp://api.test":            false,
		"https://":                  false,
		"https:api.test":            false,
		"/v1/users":                 false,
		"api.test":                  false,
		"":                          false,
		"mailto:a@b.test":           false,
	}
	for raw, want := range cases {
		u, err := url.Parse(raw)
		if err != nil {
			t.Fatalf("%q: %v", raw, err)
		}
		if got := IsHTTPURL(u); got != want {
			t.Errorf("IsHTTPURL(%q) = %v, want %v", raw, got, want)
		}
	}
	if IsHTTPURL(nil) {
		t.Error("IsHTTPURL(nil) = true")
	}
}
