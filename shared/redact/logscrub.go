package redact

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
	msg := x.s.Scrub(r.Message)
	changed := msg != r.Message
	r.Attrs(func(a slog.Attr) bool {
		_, c := x.attr(a)
		changed = changed || c
		return !changed
	})
	if !changed {
		// Nothing to redact, the common case: the record as it is.
		return x.h.Handle(ctx, r)
	}
	out := slog.NewRecord(r.Time, r.Level, msg, r.PC)
	r.Attrs(func(a slog.Attr) bool {
		clean, _ := x.attr(a)
		out.AddAttrs(clean)
		return true
	})
	return x.h.Handle(ctx, out)
}

func (x *scrubHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	clean := make([]slog.Attr, len(attrs))
	for i, a := range attrs {
		clean[i], _ = x.attr(a)
	}
	return &scrubHandler{h: x.h.WithAttrs(clean), s: x.s}
}

func (x *scrubHandler) WithGroup(name string) slog.Handler {
	return &scrubHandler{h: x.h.WithGroup(name), s: x.s}
}

// attr is a scrubbed, and whether scrubbing changed it.
func (x *scrubHandler) attr(a slog.Attr) (slog.Attr, bool) {
	v := a.Value.Resolve()
	resolved := v.Kind() != a.Value.Kind()
	clean, changed := x.value(v)
	a.Value = clean
	return a, changed || resolved
}

// value is v scrubbed, and whether that changed it.
func (x *scrubHandler) value(v slog.Value) (slog.Value, bool) {
	switch v.Kind() {
	case slog.KindString:
		if clean := x.s.Scrub(v.String()); clean != v.String() {
			return slog.StringValue(clean), true
		}
	case slog.KindGroup:
		attrs := v.Group()
		clean := make([]slog.Attr, len(attrs))
		changed := false
		for i, a := range attrs {
			var c bool
			clean[i], c = x.attr(a)
			changed = changed || c
		}
		if changed {
			return slog.GroupValue(clean...), true
		}
	case slog.KindAny:
		if err, ok := v.Any().(error); ok {
			if clean := x.s.Scrub(err.Error()); clean != err.Error() {
				return slog.StringValue(clean), true
			}
			return v, false
		}
		// As the JSON handler would write it; replaced by its scrubbed
		// text only when that differs.
		b, err := json.Marshal(v.Any())
		if err != nil {
			return v, false
		}
		if clean := x.s.Scrub(string(b)); clean != string(b) {
			return slog.StringValue(clean), true
		}
	}
	return v, false
}
