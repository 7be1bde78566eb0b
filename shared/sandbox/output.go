package sandbox

import "context"

// The streams of Output.
const (
	Stdout = "stdout"
	Stderr = "stderr"
)

// Output hears what code prints while it runs, a piece at a time:
// stream is Stdout or Stderr, text whole characters of it. A provider
// may call it from several goroutines (one per stream), never after
// Execute returned.
type Output func(stream, text string)

type outputKey struct{}

// WithOutput returns ctx whose Execute calls stream what the code prints
// to out (nil: nothing). It rides the context so that every Session, and
// every wrapper of one, passes it on unchanged.
func WithOutput(ctx context.Context, out Output) context.Context {
	if out == nil {
		return ctx
	}
	return context.WithValue(ctx, outputKey{}, out)
}

// OutputOf is ctx's Output; nil when there is none.
func OutputOf(ctx context.Context) Output {
	out, _ := ctx.Value(outputKey{}).(Output)
	return out
}

// OutputWriter is an io.Writer that hands what is written to out as
// text of one stream, whole characters only: a character split between
// two writes waits for its end. A nil out makes it discard.
type OutputWriter struct {
	out    Output
	stream string
	carry  []byte
}

// NewOutputWriter writes stream's text to out.
func NewOutputWriter(out Output, stream string) *OutputWriter {
	return &OutputWriter{out: out, stream: stream}
}

// Write hands p's whole characters to the Output; it never fails.
func (w *OutputWriter) Write(p []byte) (int, error) {
	if w.out == nil || len(p) == 0 {
		return len(p), nil
	}
	b := append(w.carry, p...)
	cut := len(b) - len(trimPartialRune(b))
	w.carry = append(w.carry[:0], b[len(b)-cut:]...)
	if text := b[:len(b)-cut]; len(text) > 0 {
		w.out(w.stream, string(text))
	}
	return len(p), nil
}
