package redact

import (
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"math/bits"
	"net/url"
	"strings"
	"sync/atomic"
	"unicode/utf8"
)

// Redacted replaces a credential an upstream echoed back.
const Redacted = "[redacted]"

// MinPiece is the shortest run of a secret's characters that is redacted
// wherever it appears: the secret, or a piece long enough to stand for it
// (an upstream that echoes a key cut to its first or last 10 characters),
// not a fragment other text shares with it. A key's random part carries
// about 6 bits a character, so 10 characters (with a provider's "sk-" or
// "e2b_" prefix, at least 6 random ones) still name one key; 6 did too,
// but words and ids share 6-character runs with secrets made of words
// (the local stack's "commonly-local-dev-secret" cut its request ids
// "local-…" to "[redacted]…"). A secret shorter than MinPiece is redacted
// only whole.
const MinPiece = 10

// encodedPiece is the shortest run of a secret's encoded form (base64,
// hex) that is redacted: 12 characters stand for 9 bytes of base64 and 6
// of hex, long enough not to be found by chance in ids and hashes.
const encodedPiece = 12

// window is the last (up to) 16 bytes of text, ASCII-lowercased: the key
// of a piece in the scrubber's sets.
type window struct{ hi, lo uint64 }

// push shifts b into w.
func (w window) push(b byte) window {
	return window{hi: w.hi<<8 | w.lo>>56, lo: w.lo<<8 | uint64(lowerByte(b))}
}

// last is w's last n bytes (8 < n <= 16).
func (w window) last(n int) window {
	return window{hi: w.hi & (1<<(8*(n-8)) - 1), lo: w.lo}
}

// Scrubber removes configured secrets from text an upstream sent back,
// before it is logged or shown: every copy of a secret and every piece of
// one that could identify it, in the forms an upstream echoes: as it is,
// in any letter case, URL- or JSON-escaped, base64 (standard or URL
// alphabet, at any byte offset, so inside a larger encoded value such as
// a Basic credential too) and hex. Build it once (NewScrubber) and use it
// from any goroutine: it is read only.
type Scrubber struct {
	// raw and enc hold every MinPiece- and encodedPiece-long window of
	// the secrets' forms, ASCII-lowercased.
	raw, enc pieceSet
	// short are the lowercased forms of secrets shorter than MinPiece,
	// redacted only whole.
	short []string
}

// NewScrubber builds a scrubber for secrets; empty ones are ignored.
func NewScrubber(secrets ...string) *Scrubber {
	s := &Scrubber{}
	for _, secret := range secrets {
		if secret == "" {
			continue
		}
		for _, f := range plainForms(secret) {
			if len(f) < MinPiece {
				s.short = append(s.short, lowerASCII(f))
				continue
			}
			addWindows(&s.raw, f, MinPiece)
		}
		if len(secret) < MinPiece {
			continue
		}
		for _, f := range encodedForms(secret) {
			addWindows(&s.enc, f, encodedPiece)
		}
	}
	return s
}

// plainForms are a secret as text may carry it: as it is and escaped.
func plainForms(secret string) []string {
	forms := []string{secret, url.QueryEscape(secret), url.PathEscape(secret)}
	if b, err := json.Marshal(secret); err == nil {
		forms = append(forms, strings.Trim(string(b), `"`))
	}
	return forms
}

// encodedForms are a secret's base64 and hex encodings. Base64 encodes
// three bytes in four characters, so a secret inside a larger value comes
// out differently at each of the three byte offsets: each is encoded
// after 0, 1 or 2 bytes, and the characters that mix in those bytes or
// the next ones are left out.
func encodedForms(secret string) []string {
	forms := []string{hex.EncodeToString([]byte(secret))}
	for offset := range 3 {
		b := append(make([]byte, offset), secret...)
		for _, enc := range []*base64.Encoding{base64.RawStdEncoding, base64.RawURLEncoding} {
			f := enc.EncodeToString(b)
			f = f[(8*offset+5)/6:] // characters whose bits are all the secret's
			if len(b)%3 != 0 {
				f = f[:len(f)-1] // the last one shares its bits with what follows
			}
			forms = append(forms, f)
		}
	}
	return forms
}

func addWindows(set *pieceSet, form string, n int) {
	var w window
	for i := range len(form) {
		w = w.push(form[i])
		if i+1 >= n {
			set.add(w.last(n))
		}
	}
}

// pieceSet is a set of windows with a bit filter in front of its map:
// nearly every window of a text is in no secret, and one bit says so
// without hashing the window into the map (Scrub looks up two windows a
// byte, on every log line and span).
type pieceSet struct {
	bits []uint64 // filterBits bits; nil while the set is empty
	m    map[window]struct{}
}

const filterBits = 1 << 16

// slot is w's bit in the filter: a multiplicative hash of both halves.
func (w window) slot() uint32 {
	return uint32((w.lo ^ bits.RotateLeft64(w.hi, 29)) * 0x9e3779b97f4a7c15 >> (64 - 16))
}

func (p *pieceSet) add(w window) {
	if p.m == nil {
		p.m, p.bits = map[window]struct{}{}, make([]uint64, filterBits/64)
	}
	p.m[w] = struct{}{}
	s := w.slot()
	p.bits[s>>6] |= 1 << (s & 63)
}

func (p *pieceSet) has(w window) bool {
	if p.bits == nil {
		return false
	}
	s := w.slot()
	if p.bits[s>>6]&(1<<(s&63)) == 0 {
		return false
	}
	_, ok := p.m[w]
	return ok
}

func lowerByte(b byte) byte {
	if 'A' <= b && b <= 'Z' {
		return b + 'a' - 'A'
	}
	return b
}

// lowerASCII lowercases A-Z only, so byte offsets stay those of s.
func lowerASCII(s string) string {
	b := []byte(s)
	for i := range b {
		b[i] = lowerByte(b[i])
	}
	return string(b)
}

// Empty reports whether the scrubber holds no secret.
func (s *Scrubber) Empty() bool {
	return s == nil || len(s.raw.m) == 0 && len(s.enc.m) == 0 && len(s.short) == 0
}

// Scrub returns text with every run of characters that belongs to a
// secret replaced by Redacted (adjacent runs become one).
func (s *Scrubber) Scrub(text string) string {
	if s.Empty() || len(text) == 0 {
		return text
	}
	var covered []bool
	mark := func(from, to int) {
		if covered == nil {
			covered = make([]bool, len(text))
		}
		for i := from; i < to; i++ {
			covered[i] = true
		}
	}
	var w window
	for i := range len(text) {
		w = w.push(text[i])
		if i+1 >= MinPiece {
			if s.raw.has(w.last(MinPiece)) {
				mark(i+1-MinPiece, i+1)
			}
		}
		if i+1 >= encodedPiece {
			if s.enc.has(w.last(encodedPiece)) {
				mark(i+1-encodedPiece, i+1)
			}
		}
	}
	if len(s.short) > 0 {
		lower := lowerASCII(text)
		for _, f := range s.short {
			for from := 0; ; {
				j := strings.Index(lower[from:], f)
				if j < 0 {
					break
				}
				mark(from+j, from+j+len(f))
				from += j + len(f)
			}
		}
	}
	if covered == nil {
		return text
	}
	var b strings.Builder
	b.Grow(len(text))
	for i := 0; i < len(text); {
		if !covered[i] {
			b.WriteByte(text[i])
			i++
			continue
		}
		b.WriteString(Redacted)
		for i < len(text) && covered[i] {
			i++
		}
	}
	out := b.String()
	if !utf8.ValidString(out) && utf8.ValidString(text) {
		// A piece cut a character of the text in two: drop its halves.
		out = strings.ToValidUTF8(out, "")
	}
	return out
}

// last is the scrubber of the latest Scrub call's secret: a tool scrubs
// many fields with the same brokered token in a row.
var last atomic.Pointer[secretScrubber]

type secretScrubber struct {
	secret string
	s      *Scrubber
}

// Scrub removes a secret from text an upstream sent back (a service, or
// someone's message, could echo it, and the model must never see it): as
// a Scrubber does, every copy and identifying piece of it, in every form.
func Scrub(s, secret string) string {
	if secret == "" {
		return s
	}
	c := last.Load()
	if c == nil || c.secret != secret {
		c = &secretScrubber{secret: secret, s: NewScrubber(secret)}
		last.Store(c)
	}
	return c.s.Scrub(s)
}
