package tracing

import (
	"context"
	"sync"
	"sync/atomic"

	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// Bounds of what the tail sampler holds while a trace is undecided.
const (
	// maxPendingTraces bounds the traces held at once; past it the oldest
	// is decided early (by its share). A Lambda container runs one
	// invocation at a time, the local stack a few turns.
	maxPendingTraces = 256
	// maxPendingSpans bounds the spans held for one trace; spans past it
	// are dropped (a turn makes a few dozen).
	maxPendingSpans = 2048
	// maxDecided bounds the decisions remembered for spans that end after
	// their trace's local root (a sandbox kill finishing late).
	maxDecided = 1024
)

// tailSampler is a span processor that decides which traces are exported
// when a trace's local root span ends, not when it starts, so that a
// failure anywhere in a turn keeps the whole turn: every span is recorded
// (the SDK's sampler is AlwaysSample) and held per trace; when the trace's
// local root (a span without a parent, or with a remote one) ends, the
// trace is kept if any of its spans failed (status Error) or if its trace
// id falls in the kept share (the SDK's TraceIDRatioBased decision, the
// same in every process of the trace: the API's invocation and the
// dispatched worker's agree). Kept spans go, scrubbed, to next (the
// batcher); the rest are dropped.
//
// The OpenTelemetry Go SDK samples at span start only; tail sampling is a
// collector's processor, and a Lambda function has no collector unless a
// layer adds one (docs/operations.md, "Tracing"). This is that decision,
// kept small, inside the process.
type tailSampler struct {
	next  sdktrace.SpanProcessor
	share sdktrace.Sampler
	scrub *scrubber

	mu      sync.Mutex
	pending map[trace.TraceID]*pendingTrace
	order   []trace.TraceID // pending traces, oldest first
	decided map[trace.TraceID]bool
	dorder  []trace.TraceID
	// last is the pending trace the last span joined: a turn's spans end
	// one trace at a time, so most spans skip the maps.
	lastID trace.TraceID
	last   *pendingTrace
	// forwarded is whether next got a span since the last flush: a flush
	// with nothing kept (most turns, at the stack's 5 %) leaves the batch
	// processor alone, which would wake its goroutine for nothing.
	forwarded atomic.Bool
}

type pendingTrace struct {
	spans  []sdktrace.ReadOnlySpan
	failed bool
}

var _ sdktrace.SpanProcessor = (*tailSampler)(nil)

func newTailSampler(next sdktrace.SpanProcessor, ratio float64, scrub *scrubber) *tailSampler {
	return &tailSampler{
		next: next, share: sdktrace.TraceIDRatioBased(ratio), scrub: scrub,
		pending: map[trace.TraceID]*pendingTrace{}, decided: map[trace.TraceID]bool{},
	}
}

func (t *tailSampler) OnStart(context.Context, sdktrace.ReadWriteSpan) {}

func (t *tailSampler) OnEnd(s sdktrace.ReadOnlySpan) {
	id := s.SpanContext().TraceID()
	failed := s.Status().Code == codes.Error
	localRoot := !s.Parent().IsValid() || s.Parent().IsRemote()

	t.mu.Lock()
	// A trace is pending or decided, never both.
	p := t.last
	if p == nil || t.lastID != id {
		p = t.pending[id]
	}
	if p == nil {
		if keep, ok := t.decided[id]; ok {
			t.mu.Unlock()
			if keep {
				t.forward([]sdktrace.ReadOnlySpan{s})
			}
			return
		}
		p = &pendingTrace{}
		t.pending[id] = p
		t.order = append(t.order, id)
	}
	t.lastID, t.last = id, p
	p.failed = p.failed || failed
	if len(p.spans) < maxPendingSpans {
		p.spans = append(p.spans, s)
	}
	var out []sdktrace.ReadOnlySpan
	if localRoot {
		out = t.decideLocked(id)
	}
	if len(t.order) > maxPendingTraces {
		out = append(out, t.decideLocked(t.order[0])...)
	}
	t.mu.Unlock()
	t.forward(out)
}

// decideLocked decides trace id, remembers the decision and returns the
// spans to export.
func (t *tailSampler) decideLocked(id trace.TraceID) []sdktrace.ReadOnlySpan {
	p := t.pending[id]
	if p == nil {
		return nil
	}
	delete(t.pending, id)
	if t.last == p {
		t.last = nil
	}
	for i, o := range t.order {
		if o == id {
			t.order = append(t.order[:i], t.order[i+1:]...)
			break
		}
	}
	keep := p.failed || t.share.ShouldSample(sdktrace.SamplingParameters{TraceID: id}).Decision == sdktrace.RecordAndSample
	t.decided[id] = keep
	t.dorder = append(t.dorder, id)
	if len(t.dorder) > maxDecided {
		delete(t.decided, t.dorder[0])
		t.dorder = t.dorder[1:]
	}
	if !keep {
		return nil
	}
	return p.spans
}

func (t *tailSampler) forward(spans []sdktrace.ReadOnlySpan) {
	if len(spans) > 0 {
		t.forwarded.Store(true)
	}
	for _, s := range spans {
		t.next.OnEnd(t.scrub.span(s))
	}
}

// decideAll decides every pending trace: at a flush (the end of a Lambda
// invocation, after which the process may freeze) and at shutdown.
func (t *tailSampler) decideAll() {
	t.mu.Lock()
	var out []sdktrace.ReadOnlySpan
	for len(t.order) > 0 {
		out = append(out, t.decideLocked(t.order[0])...)
	}
	t.mu.Unlock()
	t.forward(out)
}

func (t *tailSampler) ForceFlush(ctx context.Context) error {
	t.decideAll()
	if !t.forwarded.Swap(false) {
		return nil
	}
	return t.next.ForceFlush(ctx)
}

func (t *tailSampler) Shutdown(ctx context.Context) error {
	t.decideAll()
	return t.next.Shutdown(ctx)
}
