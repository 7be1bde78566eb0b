package yamljson

import (
	"strings"
	"testing"
)

func TestConvertKeepsOrderAndTypes(t *testing.T) {
	src := `
z: 1
a: [true, null, 1.5, "2", x => y]
'200': {day: 2026-12-02, version: 2026-09-14.1, n: -3}
ref: &r {k: v}
again: *r
`
	got, err := Convert([]byte(src))
	if err != nil {
		t.Fatal(err)
	}
	want := `{"z":1,"a":[true,null,1.5,"2","x => y"],"200":{"day":"2026-12-02","version":"2026-09-14.1","n":-3},"ref":{"k":"v"},"again":{"k":"v"}}`
	if compact := strings.Join(strings.Fields(string(got)), ""); compact != strings.Join(strings.Fields(want), "") {
		t.Errorf("got %s\nwant %s", got, want)
	}
	if !strings.HasSuffix(string(got), "}\n") {
		t.Error("output should end in a newline")
	}
}

func TestConvertRefusesWhatJSONCannotHold(t *testing.T) {
	for _, src := range []string{"a: .nan", "a: .inf", "? [a]\n: 1", "a: &x {b: 1}\nc:\n  <<: *x", "a: 1\n---\nb: 2", "a: [1"} {
		if _, err := Convert([]byte(src)); err == nil {
			t.Errorf("%q: converted", src)
		}
	}
}
