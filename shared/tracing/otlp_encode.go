package tracing

import (
	"math"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/sdk/instrumentation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	"google.golang.org/protobuf/encoding/protowire"
)

// The OTLP/protobuf encoding of an ExportTraceServiceRequest, written
// straight from the SDK's spans into one byte slice
// (opentelemetry-proto v1: collector/trace/v1/trace_service.proto,
// trace/v1/trace.proto, common/v1/common.proto, resource/v1/resource.proto).
//
// Why not the maintained exporter's (otlptracehttp): it builds a tree of
// generated protobuf structs, about three allocations an attribute, and
// then marshals it through the protobuf runtime; measured on a kept turn
// (~22 spans) that was ~700 allocations and ~50 KB, the largest share of
// what tracing added to a turn, and it linked gRPC and the protobuf
// runtime into every function (docs/benchmarks.md, "What tracing costs").
// The wire format is a stable, versioned spec; TestOTLPEncodingMatchesTheSDKExporter
// decodes both encodings of the same spans with the spec's generated types
// and requires them equal, so this stays the maintained exporter's
// output, byte for meaning.

// Field numbers of the messages written here.
const (
	fReqResourceSpans = 1 // ExportTraceServiceRequest.resource_spans

	fRSResource   = 1 // ResourceSpans
	fRSScopeSpans = 2
	fRSSchemaURL  = 3

	fResAttributes = 1 // Resource

	fSSScope     = 1 // ScopeSpans
	fSSSpans     = 2
	fSSSchemaURL = 3

	fScopeName       = 1 // InstrumentationScope
	fScopeVersion    = 2
	fScopeAttributes = 3

	fSpanTraceID      = 1 // Span
	fSpanSpanID       = 2
	fSpanTraceState   = 3
	fSpanParentSpanID = 4
	fSpanName         = 5
	fSpanKind         = 6
	fSpanStart        = 7
	fSpanEnd          = 8
	fSpanAttributes   = 9
	fSpanDroppedAttrs = 10
	fSpanEvents       = 11
	fSpanDroppedEvs   = 12
	fSpanLinks        = 13
	fSpanDroppedLinks = 14
	fSpanStatus       = 15
	fSpanFlags        = 16

	fEventTime         = 1 // Span.Event
	fEventName         = 2
	fEventAttributes   = 3
	fEventDroppedAttrs = 4

	fLinkTraceID      = 1 // Span.Link
	fLinkSpanID       = 2
	fLinkAttributes   = 4
	fLinkDroppedAttrs = 5
	fLinkFlags        = 6

	fStatusMessage = 2 // Status
	fStatusCode    = 3

	fKVKey   = 1 // KeyValue
	fKVValue = 2

	fAnyString = 1 // AnyValue (a oneof: written even when zero)
	fAnyBool   = 2
	fAnyInt    = 3
	fAnyDouble = 4
	fAnyArray  = 5
	fAnyKVList = 6
	fAnyBytes  = 7

	fListValues = 1 // ArrayValue.values, KeyValueList.values
)

// Span flags: the W3C trace flags in the low byte, and whether the
// parent's remoteness is known and true (SpanFlags in trace.proto).
const (
	spanFlagsHasIsRemote = 0x100
	spanFlagsIsRemote    = 0x200
)

// Status codes on the wire (Status.StatusCode): Go's codes differ.
const (
	statusUnset = 0
	statusOK    = 1
	statusError = 2
)

// protoBuf appends protobuf fields to b. Nested messages are written in
// place: open reserves one byte for the length, close writes it, moving
// the message right when its length needs more than one byte; the total
// moved is a few times the request's size, instead of sizing every
// message twice.
type protoBuf struct{ b []byte }

func (e *protoBuf) open(field protowire.Number) int {
	e.b = protowire.AppendTag(e.b, field, protowire.BytesType)
	e.b = append(e.b, 0)
	return len(e.b)
}

func (e *protoBuf) close(start int) {
	n := len(e.b) - start
	if size := protowire.SizeVarint(uint64(n)); size > 1 {
		e.b = append(e.b, make([]byte, size-1)...)
		copy(e.b[start+size-1:], e.b[start:start+n])
	}
	protowire.AppendVarint(e.b[:start-1], uint64(n))
}

func (e *protoBuf) str(field protowire.Number, s string) {
	if s != "" {
		e.strAlways(field, s)
	}
}

func (e *protoBuf) strAlways(field protowire.Number, s string) {
	e.b = protowire.AppendTag(e.b, field, protowire.BytesType)
	e.b = protowire.AppendString(e.b, s)
}

func (e *protoBuf) bytes(field protowire.Number, v []byte) {
	e.b = protowire.AppendTag(e.b, field, protowire.BytesType)
	e.b = protowire.AppendBytes(e.b, v)
}

func (e *protoBuf) varint(field protowire.Number, v uint64) {
	if v != 0 {
		e.varintAlways(field, v)
	}
}

func (e *protoBuf) varintAlways(field protowire.Number, v uint64) {
	e.b = protowire.AppendTag(e.b, field, protowire.VarintType)
	e.b = protowire.AppendVarint(e.b, v)
}

func (e *protoBuf) fixed64(field protowire.Number, v uint64) {
	if v != 0 {
		e.b = protowire.AppendTag(e.b, field, protowire.Fixed64Type)
		e.b = protowire.AppendFixed64(e.b, v)
	}
}

func (e *protoBuf) fixed32(field protowire.Number, v uint32) {
	if v != 0 {
		e.b = protowire.AppendTag(e.b, field, protowire.Fixed32Type)
		e.b = protowire.AppendFixed32(e.b, v)
	}
}

// spanGroup is one ScopeSpans of the request: the spans of one resource
// and one instrumentation scope, in the order they came.
type spanGroup struct {
	res   attribute.Distinct
	scope instrumentation.Scope
	spans []int
	done  bool // written with an earlier group of its resource
}

// otlpEncoder holds what one encoding reuses: the groups and their span
// indexes (an exporter encodes one batch at a time).
type otlpEncoder struct {
	protoBuf
	groups []spanGroup
}

// encode appends the ExportTraceServiceRequest holding spans to dst:
// one ResourceSpans per resource, one ScopeSpans per scope within it,
// each in the order of its first span.
func (e *otlpEncoder) encode(dst []byte, spans []sdktrace.ReadOnlySpan) []byte {
	e.b = dst
	e.group(spans)
	for i := range e.groups {
		g := &e.groups[i]
		if g.done {
			continue
		}
		res := spans[g.spans[0]].Resource()
		rs := e.open(fReqResourceSpans)
		if res != nil {
			r := e.open(fRSResource)
			for it := res.Iter(); it.Next(); {
				e.keyValue(fResAttributes, it.Attribute())
			}
			e.close(r)
		}
		for j := i; j < len(e.groups); j++ {
			if h := &e.groups[j]; !h.done && h.res == g.res {
				e.scopeSpans(spans, h)
				h.done = true
			}
		}
		if res != nil {
			e.str(fRSSchemaURL, res.SchemaURL())
		}
		e.close(rs)
	}
	out := e.b
	e.b = nil
	return out
}

// group sorts the spans into e.groups by resource and scope.
func (e *otlpEncoder) group(spans []sdktrace.ReadOnlySpan) {
	e.groups = e.groups[:cap(e.groups)]
	n := 0
	for i, s := range spans {
		if s == nil {
			continue
		}
		res, scope := s.Resource().Equivalent(), s.InstrumentationScope()
		k := 0
		for k < n && (e.groups[k].res != res || !sameScope(e.groups[k].scope, scope)) {
			k++
		}
		if k == n {
			if n == len(e.groups) {
				e.groups = append(e.groups, spanGroup{})
			}
			e.groups[n].res, e.groups[n].scope, e.groups[n].spans, e.groups[n].done = res, scope, e.groups[n].spans[:0], false
			n++
		}
		e.groups[k].spans = append(e.groups[k].spans, i)
	}
	e.groups = e.groups[:n]
}

func sameScope(a, b instrumentation.Scope) bool {
	return a.Name == b.Name && a.Version == b.Version && a.SchemaURL == b.SchemaURL && a.Attributes.Equivalent() == b.Attributes.Equivalent()
}

func (e *otlpEncoder) scopeSpans(spans []sdktrace.ReadOnlySpan, g *spanGroup) {
	ss := e.open(fRSScopeSpans)
	if g.scope != (instrumentation.Scope{}) {
		sc := e.open(fSSScope)
		e.str(fScopeName, g.scope.Name)
		e.str(fScopeVersion, g.scope.Version)
		for it := g.scope.Attributes.Iter(); it.Next(); {
			e.keyValue(fScopeAttributes, it.Attribute())
		}
		e.close(sc)
	}
	for _, i := range g.spans {
		e.span(spans[i])
	}
	e.str(fSSSchemaURL, g.scope.SchemaURL)
	e.close(ss)
}

func (e *otlpEncoder) span(s sdktrace.ReadOnlySpan) {
	sp := e.open(fSSSpans)
	sc := s.SpanContext()
	tid, sid := sc.TraceID(), sc.SpanID()
	e.bytes(fSpanTraceID, tid[:])
	e.bytes(fSpanSpanID, sid[:])
	if ts := sc.TraceState(); ts.Len() > 0 {
		e.str(fSpanTraceState, ts.String())
	}
	parent := s.Parent()
	if psid := parent.SpanID(); psid.IsValid() {
		e.bytes(fSpanParentSpanID, psid[:])
	}
	e.str(fSpanName, s.Name())
	e.varint(fSpanKind, uint64(spanKind(s.SpanKind())))
	e.fixed64(fSpanStart, unixNano(s.StartTime().UnixNano()))
	e.fixed64(fSpanEnd, unixNano(s.EndTime().UnixNano()))
	for _, kv := range s.Attributes() {
		e.keyValue(fSpanAttributes, kv)
	}
	e.varint(fSpanDroppedAttrs, clampCount(s.DroppedAttributes()))
	for _, ev := range s.Events() {
		m := e.open(fSpanEvents)
		e.fixed64(fEventTime, unixNano(ev.Time.UnixNano()))
		e.str(fEventName, ev.Name)
		for _, kv := range ev.Attributes {
			e.keyValue(fEventAttributes, kv)
		}
		e.varint(fEventDroppedAttrs, clampCount(ev.DroppedAttributeCount))
		e.close(m)
	}
	e.varint(fSpanDroppedEvs, clampCount(s.DroppedEvents()))
	for _, l := range s.Links() {
		m := e.open(fSpanLinks)
		ltid, lsid := l.SpanContext.TraceID(), l.SpanContext.SpanID()
		e.bytes(fLinkTraceID, ltid[:])
		e.bytes(fLinkSpanID, lsid[:])
		for _, kv := range l.Attributes {
			e.keyValue(fLinkAttributes, kv)
		}
		e.varint(fLinkDroppedAttrs, clampCount(l.DroppedAttributeCount))
		e.fixed32(fLinkFlags, spanFlags(l.SpanContext.TraceFlags(), l.SpanContext))
		e.close(m)
	}
	e.varint(fSpanDroppedLinks, clampCount(s.DroppedLinks()))
	st := e.open(fSpanStatus) // always present, as the SDK exporter writes it
	status := s.Status()
	e.str(fStatusMessage, status.Description)
	e.varint(fStatusCode, statusCode(status.Code))
	e.close(st)
	e.fixed32(fSpanFlags, spanFlags(sc.TraceFlags(), parent))
	e.close(sp)
}

// keyValue writes one KeyValue; its value is always present (an EMPTY
// attribute is an AnyValue with nothing set).
func (e *otlpEncoder) keyValue(field protowire.Number, kv attribute.KeyValue) {
	m := e.open(field)
	e.str(fKVKey, string(kv.Key))
	v := e.open(fKVValue)
	e.anyValue(kv.Value)
	e.close(v)
	e.close(m)
}

// anyValue writes the fields of an AnyValue for v.
func (e *otlpEncoder) anyValue(v attribute.Value) {
	switch v.Type() {
	case attribute.BOOL:
		e.boolValue(v.AsBool())
	case attribute.INT64:
		e.varintAlways(fAnyInt, uint64(v.AsInt64()))
	case attribute.FLOAT64:
		e.doubleValue(v.AsFloat64())
	case attribute.STRING:
		e.strAlways(fAnyString, v.AsString())
	case attribute.BYTESLICE:
		e.bytes(fAnyBytes, v.AsByteSlice())
	case attribute.BOOLSLICE:
		arrayValue(e, v.AsBoolSlice(), e.boolValue)
	case attribute.INT64SLICE:
		arrayValue(e, v.AsInt64Slice(), func(x int64) { e.varintAlways(fAnyInt, uint64(x)) })
	case attribute.FLOAT64SLICE:
		arrayValue(e, v.AsFloat64Slice(), e.doubleValue)
	case attribute.STRINGSLICE:
		arrayValue(e, v.AsStringSlice(), func(x string) { e.strAlways(fAnyString, x) })
	case attribute.SLICE:
		arrayValue(e, v.AsSlice(), e.anyValue)
	case attribute.MAP:
		a := e.open(fAnyKVList)
		for _, kv := range v.AsMap() {
			e.keyValue(fListValues, kv)
		}
		e.close(a)
	case attribute.EMPTY:
	default:
		e.strAlways(fAnyString, "INVALID")
	}
}

// arrayValue writes an ArrayValue of xs, each AnyValue's fields written
// by value.
func arrayValue[T any](e *otlpEncoder, xs []T, value func(T)) {
	a := e.open(fAnyArray)
	for _, x := range xs {
		m := e.open(fListValues)
		value(x)
		e.close(m)
	}
	e.close(a)
}

func (e *otlpEncoder) boolValue(b bool) {
	e.varintAlways(fAnyBool, protowire.EncodeBool(b))
}

func (e *otlpEncoder) doubleValue(f float64) {
	e.b = protowire.AppendTag(e.b, fAnyDouble, protowire.Fixed64Type)
	e.b = protowire.AppendFixed64(e.b, math.Float64bits(f))
}

// spanKind maps the API's kind to the wire's (the same numbers, but an
// unknown kind is UNSPECIFIED).
func spanKind(k trace.SpanKind) int {
	switch k {
	case trace.SpanKindInternal, trace.SpanKindServer, trace.SpanKindClient, trace.SpanKindProducer, trace.SpanKindConsumer:
		return int(k)
	default:
		return 0
	}
}

func statusCode(c codes.Code) uint64 {
	switch c {
	case codes.Ok:
		return statusOK
	case codes.Error:
		return statusError
	default:
		return statusUnset
	}
}

func spanFlags(tf trace.TraceFlags, parent trace.SpanContext) uint32 {
	f := uint32(tf) | spanFlagsHasIsRemote
	if parent.IsRemote() {
		f |= spanFlagsIsRemote
	}
	return f
}

func unixNano(n int64) uint64 { return uint64(max(0, n)) }

func clampCount(n int) uint64 { return uint64(min(max(0, int64(n)), math.MaxUint32)) }
