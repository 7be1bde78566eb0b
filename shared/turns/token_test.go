package turns_test

import (
	"encoding/base64"
	"errors"
	"testing"

	"github.com/commonly/runtime/shared/turns"
)

// jwtWith is a compact JWT whose payload is these bytes (the signature
// does not matter here: the check reads what was sent).
func jwtWith(payload string) string {
	return "eyJhbGciOiJSUzI1NiJ9." + base64.RawURLEncoding.EncodeToString([]byte(payload)) + ".c2ln"
}

// A subject that JSON decoding would change is refused before decoding:
// "u\xff1" and "u\xfe1" would both decode to "u\uFFFD1", one user.
func TestCheckTokenSubject(t *testing.T) {
	for _, c := range []struct {
		name, payload string
		malformed     bool
	}{
		{"ascii", `{"sub":"user-1"}`, false},
		{"unicode", `{"sub":"ünïcode 😀"}`, false},
		{"an escaped pair", `{"sub":"a\ud83d\ude00b"}`, false},
		{"U+FFFD itself, escaped", `{"sub":"u\ufffd1"}`, false},
		{"U+FFFD itself, as UTF-8", "{\"sub\":\"u\xef\xbf\xbd1\"}", false},
		{"other escapes", `{"sub":"a\"b\\c\/d\u0041"}`, false},
		{"not UTF-8", "{\"sub\":\"u\xff1\"}", true},
		{"a truncated sequence", "{\"sub\":\"u\xe2\x82\"}", true},
		{"a lone high surrogate", `{"sub":"u\ud800"}`, true},
		{"a high surrogate then text", `{"sub":"u\ud800abcdefg"}`, true},
		{"a lone low surrogate", `{"sub":"u\udc001"}`, true},
		{"two highs", `{"sub":"\ud800\ud800"}`, true},
		{"a bad sub among two", "{\"sub\":\"u\xff1\",\"sub\":\"u1\"}", true},
		{"bad bytes in another claim", "{\"sub\":\"u1\",\"name\":\"\xff\"}", false},
		{"a nested sub", "{\"sub\":\"u1\",\"x\":{\"sub\":\"\xff\"}}", false},
		{"a numeric sub", `{"sub":12}`, false},
		{"no sub", `{"aud":"a"}`, false},
	} {
		err := turns.CheckTokenSubject(jwtWith(c.payload))
		if got := errors.Is(err, turns.ErrMalformedIdentity); got != c.malformed {
			t.Errorf("%s: %v", c.name, err)
		}
	}
	for _, notJWT := range []string{"", "abc", "a.b", "a.!!!.c", "a." + base64.RawURLEncoding.EncodeToString([]byte("[1]")) + ".c"} {
		if err := turns.CheckTokenSubject(notJWT); err != nil {
			t.Errorf("%q: %v", notJWT, err)
		}
	}
}
