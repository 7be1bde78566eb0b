package jsonraw_test

import (
	"testing"

	"github.com/commonly/runtime/shared/jsonraw"
)

func TestFaithfulString(t *testing.T) {
	for seg, want := range map[string]bool{
		`"plain"`:             true,
		`"ünï 😀"`:             true,
		`"a\ud83d\ude00b"`:    true,
		`"\ufffd"`:            true,
		`"a\"b\\c\/\u0041\n"`: true,
		`"\\ud800"`:           true, // an escaped backslash, then text
		"\"\xff\"":            false,
		"\"\xe2\x82\"":        false,
		`"\ud800"`:            false,
		`"\ud800x\udc00"`:     false,
		`"\udc00\ud800"`:      false,
		`"\ud800\ud800"`:      false,
		`"\uD83D\uDE00"`:      true,
	} {
		if got := jsonraw.FaithfulString([]byte(seg)); got != want {
			t.Errorf("%q: %v, want %v", seg, got, want)
		}
	}
}
