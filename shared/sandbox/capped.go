package sandbox

import "unicode/utf8"

// CappedBuffer accumulates output up to a byte limit and silently drops the
// rest, so that a writer (a process pipe, a stream) keeps draining without
// our memory growing. It is not safe for concurrent use.
type CappedBuffer struct {
	max       int
	buf       []byte
	truncated bool
}

// NewCappedBuffer returns a buffer that keeps at most limit bytes.
func NewCappedBuffer(limit int) *CappedBuffer {
	if limit < 0 {
		limit = 0
	}
	return &CappedBuffer{max: limit}
}

// Write keeps what fits and reports the whole of p as written: dropping is
// the point, not an error for the writer.
func (b *CappedBuffer) Write(p []byte) (int, error) {
	b.append(p)
	return len(p), nil
}

// WriteString is Write for strings.
func (b *CappedBuffer) WriteString(s string) (int, error) {
	b.append([]byte(s))
	return len(s), nil
}

func (b *CappedBuffer) append(p []byte) {
	room := b.max - len(b.buf)
	if len(p) > room {
		p = p[:max(room, 0)]
		b.truncated = true
	}
	b.buf = append(b.buf, p...)
}

// Truncated reports whether anything was dropped.
func (b *CappedBuffer) Truncated() bool { return b.truncated }

// Len is the number of bytes kept.
func (b *CappedBuffer) Len() int { return len(b.buf) }

// String is what was kept, followed by TruncatedMarker when something was
// dropped. A rune split by the cut is removed rather than shown broken.
func (b *CappedBuffer) String() string {
	if !b.truncated {
		return string(b.buf)
	}
	return Cut(b.buf, len(b.buf))
}

// Cut is the first n bytes of p (n <= len(p)) followed by
// TruncatedMarker. A rune split by the cut is removed rather than shown
// broken.
func Cut[T string | []byte](p T, n int) string {
	return string(trimPartialRune(p[:n])) + TruncatedMarker
}

// trimPartialRune removes an incomplete UTF-8 sequence left at the end
// of p by a cut at a byte offset.
func trimPartialRune[T string | []byte](p T) T {
	// A rune is at most 4 bytes, so only the last 3 can start a partial one.
	for i := 1; i <= 3 && i <= len(p); i++ {
		c := p[len(p)-i]
		if c < utf8.RuneSelf {
			return p // ASCII: nothing is split
		}
		if utf8.RuneStart(c) {
			if !utf8.FullRune([]byte(p[len(p)-i:])) {
				return p[:len(p)-i]
			}
			return p
		}
	}
	return p
}
