// Package jsonraw checks JSON text as it was sent, before a decoder
// changes it: encoding/json (and most decoders) turn bytes that are not
// UTF-8, and an escaped unpaired surrogate, into U+FFFD, so two different
// texts would decode to one. The API's body decoder and the bearer
// token's subject check refuse such text instead.
package jsonraw

import "unicode/utf8"

// FaithfulString reports whether a JSON string token's raw bytes (its
// quotes included, or any part of them) are valid UTF-8 and escape no
// unpaired surrogate (a "\ud83d" alone, or a low one first); a pair of
// escapes making one character is fine.
func FaithfulString(seg []byte) bool {
	if !utf8.Valid(seg) {
		return false
	}
	for i := 0; i < len(seg); i++ {
		if seg[i] != '\\' {
			continue
		}
		r := escapedUnit(seg, i)
		switch {
		case r < 0: // another escape: skip the escaped character
			i++
		case r >= 0xD800 && r < 0xDC00:
			if lo := escapedUnit(seg, i+6); lo < 0xDC00 || lo > 0xDFFF {
				return false
			}
			i += 11
		case r >= 0xDC00 && r <= 0xDFFF:
			return false
		default:
			i += 5
		}
	}
	return true
}

// escapedUnit is the UTF-16 code unit of the \uXXXX escape at seg[i:],
// or -1 when there is none.
func escapedUnit(seg []byte, i int) rune {
	if i+6 > len(seg) || seg[i] != '\\' || seg[i+1] != 'u' {
		return -1
	}
	var r rune
	for _, c := range seg[i+2 : i+6] {
		switch {
		case '0' <= c && c <= '9':
			r = r<<4 | rune(c-'0')
		case 'a' <= c && c <= 'f':
			r = r<<4 | rune(c-'a'+10)
		case 'A' <= c && c <= 'F':
			r = r<<4 | rune(c-'A'+10)
		default:
			return -1
		}
	}
	return r
}
