package agent

import "testing"

func TestNormalizeArgs(t *testing.T) {
	cases := []struct{ a, b string }{
		{`{"a":1,"b":[1,2]}`, ` { "b" : [1, 2], "a" : 1 } `},
		{``, `{}`},
		{`{"s":"<&>"}`, `{"s":"\u003c\u0026\u003e"}`},
		{`{"x":{"d":1,"c":2}}`, `{"x":{"c":2,"d":1}}`},
	}
	for _, c := range cases {
		if normalizeArgs(c.a) != normalizeArgs(c.b) {
			t.Errorf("%s and %s differ: %s vs %s", c.a, c.b, normalizeArgs(c.a), normalizeArgs(c.b))
		}
	}
	differ := []struct{ a, b string }{
		{`{"a":1}`, `{"a":"1"}`},
		{`{"a":1}`, `{"a":1.0}`},
		{`{"a":`, `{"a":1}`},
		{`{"a":1} x`, `{"a":1}`},
	}
	for _, c := range differ {
		if normalizeArgs(c.a) == normalizeArgs(c.b) {
			t.Errorf("%s and %s compare equal", c.a, c.b)
		}
	}
}

func TestRepeatBreakerCounts(t *testing.T) {
	var r repeatBreaker
	seq := []struct {
		name, args string
		want       int
	}{
		{"a", `{"x":1}`, 1},
		{"a", `{ "x": 1 }`, 2},
		{"b", `{"x":1}`, 1},
		{"a", `{"x":1}`, 1},
		{"a", `{"x":1}`, 2},
		{"a", `{"x":1}`, 3},
	}
	for i, s := range seq {
		if got := r.see(s.name, s.args); got != s.want {
			t.Fatalf("call %d: count %d, want %d", i, got, s.want)
		}
	}
}
