package textcap

import (
	"context"
	"encoding/json"
	"log/slog"
)

// Handler wraps h so that every record it writes is scrubbed: the message
// and every string an attribute carries (strings, errors, values that
// log themselves, groups, and other values as the JSON handler would
// write them). Upstream text meets the log in many places (a proxy's
// error body, a transport error, a provider's message); scrubbing where
// the lines are written covers them all, including the ones a later
// change adds. A scrubber without secrets returns h.
func (s *Scrubber) Handler(h slog.Handler) slog.Handler {
	if s.Empty() {
		return h
	}
	return &scrubHandler{h: h, s: s}
}

type scrubHandler struct {
	h slog.Handler
	s *Scrubber
}

func (x *scrubHandler) Enabled(ctx context.Context, l slog.Level) bool { return x.h.Enabled(ctx, l) }

func (x *scrubHandler) Handle(ctx context.Context, r slog.Record) error {
	out := slog.NewRecord(r.Time, r.Level, x.s.Scrub(r.Message), r.PC)
	r.Attrs(func(a slog.Attr) bool {
		out.AddAttrs(x.attr(a))
		return true
	})
	return x.h.Handle(ctx, out)
}

func (x *scrubHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	clean := make([]slog.Attr, len(attrs))
	for i, a := range attrs {
		clean[i] = x.attr(a)
	}
	return &scrubHandler{h: x.h.WithAttrs(clean), s: x.s}
}

func (x *scrubHandler) WithGroup(name string) slog.Handler {
	return &scrubHandler{h: x.h.WithGroup(name), s: x.s}
}

func (x *scrubHandler) attr(a slog.Attr) slog.Attr {
	a.Value = x.value(a.Value.Resolve())
	return a
}

func (x *scrubHandler) value(v slog.Value) slog.Value {
	switch v.Kind() {
	case slog.KindString:
		return slog.StringValue(x.s.Scrub(v.String()))
	case slog.KindGroup:
		attrs := v.Group()
		clean := make([]slog.Attr, len(attrs))
		for i, a := range attrs {
			clean[i] = x.attr(a)
		}
		return slog.GroupValue(clean...)
	case slog.KindAny:
		if err, ok := v.Any().(error); ok {
			return slog.StringValue(x.s.Scrub(err.Error()))
		}
		// As the JSON handler would write it; replaced by its scrubbed
		// text only when that differs.
		b, err := json.Marshal(v.Any())
		if err != nil {
			return v
		}
		if clean := x.s.Scrub(string(b)); clean != string(b) {
			return slog.StringValue(clean)
		}
	}
	return v
}
