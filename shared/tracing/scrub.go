package tracing

import (
	"strings"
	"sync/atomic"

	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"

	"github.com/commonly/runtime/shared/redact"
)

// scrubber cleans every span before it is exported, as the log scrubber
// cleans every log line: each string attribute (span, events, links) and
// the status text lose every form of the configured secrets
// (shared/redact), and a URL's query string, which can carry a tool's
// arguments (GitHub's search query), is dropped unless content capture
// is on.
type scrubber struct {
	secrets atomic.Pointer[redact.Scrubber]
	capture bool
}

// set replaces the secrets scrubbed out.
func (s *scrubber) set(secrets ...string) { s.secrets.Store(redact.NewScrubber(secrets...)) }

// urlKeys hold URLs: their query strings go unless content is captured.
var urlKeys = map[attribute.Key]bool{semconv.URLFullKey: true, semconv.URLQueryKey: true, "http.url": true}

func (s *scrubber) span(in sdktrace.ReadOnlySpan) sdktrace.ReadOnlySpan {
	sc := s.secrets.Load()
	if sc != nil && sc.Empty() {
		sc = nil
	}
	attrs := in.Attributes()
	clean := s.attrs(sc, attrs)
	evs, ls, status := in.Events(), in.Links(), in.Status()
	if len(evs) == 0 && len(ls) == 0 && (sc == nil || status.Description == "") && sameSlice(clean, attrs) {
		// Nothing to change: the span as it is, without a copy.
		return in
	}
	out := &scrubbedSpan{ReadOnlySpan: in, status: status, attrs: clean}
	if len(evs) > 0 {
		out.events = make([]sdktrace.Event, len(evs))
		for i, e := range evs {
			e.Attributes = s.attrs(sc, e.Attributes)
			out.events[i] = e
		}
	}
	if len(ls) > 0 {
		out.links = make([]sdktrace.Link, len(ls))
		for i, l := range ls {
			l.Attributes = s.attrs(sc, l.Attributes)
			out.links[i] = l
		}
	}
	if sc != nil {
		out.status.Description = sc.Scrub(out.status.Description)
	}
	return out
}

// sameSlice says whether attrs returned its input as is.
func sameSlice(a, b []attribute.KeyValue) bool {
	return len(a) == len(b) && (len(a) == 0 || &a[0] == &b[0])
}

func (s *scrubber) attrs(sc *redact.Scrubber, in []attribute.KeyValue) []attribute.KeyValue {
	// Copy on write: most spans hold nothing to clean, and their
	// attributes go out as the SDK's snapshot holds them.
	var out []attribute.KeyValue
	for i, kv := range in {
		v, keep := s.value(sc, kv)
		if out == nil && keep && v == kv.Value {
			continue
		}
		if out == nil {
			out = make([]attribute.KeyValue, i, len(in))
			copy(out, in[:i])
		}
		if keep {
			out = append(out, attribute.KeyValue{Key: kv.Key, Value: v})
		}
	}
	if out == nil {
		return in
	}
	return out
}

// value is kv's value as exported, and whether it is exported at all.
// Attribute.Value compares equal when nothing changed (strings compare by
// content).
func (s *scrubber) value(sc *redact.Scrubber, kv attribute.KeyValue) (attribute.Value, bool) {
	v := kv.Value
	if urlKeys[kv.Key] && !s.capture {
		if kv.Key == semconv.URLQueryKey {
			return v, false
		}
		if u := v.AsString(); strings.ContainsAny(u, "?#") {
			v = attribute.StringValue(u[:strings.IndexAny(u, "?#")])
		}
	}
	if sc == nil || ownValues[kv.Key] {
		return v, true
	}
	switch v.Type() {
	case attribute.STRING:
		if str := v.AsString(); str != "" {
			if c := sc.Scrub(str); c != str {
				v = attribute.StringValue(c)
			}
		}
	case attribute.STRINGSLICE:
		vs := v.AsStringSlice()
		changed := false
		for i := range vs {
			if c := sc.Scrub(vs[i]); c != vs[i] {
				vs[i], changed = c, true
			}
		}
		if changed {
			v = attribute.StringSliceValue(vs)
		}
	}
	return v, true
}

// ownValues are the attributes whose string values the runtime makes
// itself, from the ids it makes and from closed sets (engines, statuses,
// error kinds and types, operation and provider names, the route, the AWS
// operation): no request's, model's or upstream's text can be in them,
// so they are not scanned. Everything else (ids that come from a store or
// a request, models' names and ids, URLs, request ids, captured content)
// is still scrubbed.
var ownValues = map[attribute.Key]bool{
	RunID: true, Engine: true, RunStatus: true, ErrorKind: true, ErrorType: true,
	semconv.GenAIOperationNameKey: true, semconv.GenAIProviderNameKey: true,
	"commonly.plan": true, "commonly.admit.refused": true, "commonly.code.exit_kind": true,
	Sandbox: true, semconv.HTTPRequestMethodKey: true, semconv.URLSchemeKey: true, semconv.HTTPRouteKey: true,
	"rpc.system.name": true, "rpc.method": true, "aws.region": true,
}

// scrubbedSpan is a span as exported: the SDK's span with its cleaned
// attributes, events, links and status.
type scrubbedSpan struct {
	sdktrace.ReadOnlySpan
	attrs  []attribute.KeyValue
	events []sdktrace.Event
	links  []sdktrace.Link
	status sdktrace.Status
}

func (s *scrubbedSpan) Attributes() []attribute.KeyValue { return s.attrs }
func (s *scrubbedSpan) Events() []sdktrace.Event         { return s.events }
func (s *scrubbedSpan) Links() []sdktrace.Link           { return s.links }
func (s *scrubbedSpan) Status() sdktrace.Status          { return s.status }
