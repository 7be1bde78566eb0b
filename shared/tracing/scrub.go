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
	out := &scrubbedSpan{ReadOnlySpan: in, status: in.Status()}
	out.attrs = s.attrs(sc, in.Attributes())
	if evs := in.Events(); len(evs) > 0 {
		out.events = make([]sdktrace.Event, len(evs))
		for i, e := range evs {
			e.Attributes = s.attrs(sc, e.Attributes)
			out.events[i] = e
		}
	}
	if ls := in.Links(); len(ls) > 0 {
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

func (s *scrubber) attrs(sc *redact.Scrubber, in []attribute.KeyValue) []attribute.KeyValue {
	if len(in) == 0 {
		return in
	}
	out := make([]attribute.KeyValue, 0, len(in))
	for _, kv := range in {
		if urlKeys[kv.Key] && !s.capture {
			if kv.Key == semconv.URLQueryKey {
				continue
			}
			if u := kv.Value.AsString(); strings.ContainsAny(u, "?#") {
				kv.Value = attribute.StringValue(u[:strings.IndexAny(u, "?#")])
			}
		}
		if sc != nil {
			switch kv.Value.Type() {
			case attribute.STRING:
				kv.Value = attribute.StringValue(sc.Scrub(kv.Value.AsString()))
			case attribute.STRINGSLICE:
				vs := kv.Value.AsStringSlice()
				for i := range vs {
					vs[i] = sc.Scrub(vs[i])
				}
				kv.Value = attribute.StringSliceValue(vs)
			}
		}
		out = append(out, kv)
	}
	return out
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
