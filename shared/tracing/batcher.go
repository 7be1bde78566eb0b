package tracing

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"go.opentelemetry.io/otel"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// Bounds of the spans the batcher holds between flushes.
const (
	// maxExportBatch is the most spans one export carries, and the count
	// at which the batcher exports without waiting for a flush (the SDK
	// batcher's default).
	maxExportBatch = 512
	// maxQueuedSpans bounds the spans held; past it, spans are dropped
	// and counted (the SDK batcher's default queue).
	maxQueuedSpans = 2048
)

// batcher is the span processor behind the tail sampler: it holds the
// kept spans and exports them at a flush, in the flushing goroutine. A
// Lambda invocation flushes at its end (WithFlush), before the
// environment freezes, so a span waits at most one invocation; a process
// that does not flush gets an export, in a goroutine, each
// maxExportBatch spans.
//
// Why not the SDK's BatchSpanProcessor: it hands every span to a
// goroutine of its own through a channel, waking it about once a span
// (a turn ends ~22), only for the invocation to flush and wait for it
// anyway; measured in docs/benchmarks.md ("What tracing costs").
type batcher struct {
	exp sdktrace.SpanExporter

	mu      sync.Mutex
	spans   []sdktrace.ReadOnlySpan
	spare   []sdktrace.ReadOnlySpan // the last export's slice, emptied, for the next
	dropped int
	stopped bool

	exporting sync.Mutex // one export at a time, in the order taken
}

var _ sdktrace.SpanProcessor = (*batcher)(nil)

func newBatcher(exp sdktrace.SpanExporter) *batcher { return &batcher{exp: exp} }

func (b *batcher) OnStart(context.Context, sdktrace.ReadWriteSpan) {}

func (b *batcher) OnEnd(s sdktrace.ReadOnlySpan) {
	b.mu.Lock()
	switch {
	case b.stopped:
	case len(b.spans) >= maxQueuedSpans:
		b.dropped++
	default:
		b.spans = append(b.spans, s)
	}
	full := len(b.spans) == maxExportBatch
	b.mu.Unlock()
	if full {
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), FlushTimeout)
			defer cancel()
			if err := b.export(ctx); err != nil {
				otel.Handle(err)
			}
		}()
	}
}

// ForceFlush exports every span held, in batches of maxExportBatch.
func (b *batcher) ForceFlush(ctx context.Context) error { return b.export(ctx) }

// Shutdown exports what is held and shuts the exporter down.
func (b *batcher) Shutdown(ctx context.Context) error {
	err := b.export(ctx)
	b.mu.Lock()
	b.stopped = true
	b.mu.Unlock()
	if serr := b.exp.Shutdown(ctx); serr != nil && err == nil {
		err = serr
	}
	return err
}

func (b *batcher) export(ctx context.Context) error {
	b.exporting.Lock()
	defer b.exporting.Unlock()
	b.mu.Lock()
	taken, dropped := b.spans, b.dropped
	b.spans, b.spare, b.dropped = b.spare, nil, 0
	b.mu.Unlock()
	if dropped > 0 {
		otel.Handle(fmt.Errorf("tracing: %d spans dropped: more than %d held between flushes", dropped, maxQueuedSpans))
	}
	var err error
	for spans := taken; len(spans) > 0 && err == nil; {
		n := min(len(spans), maxExportBatch)
		err = b.exp.ExportSpans(ctx, spans[:n]) // a failed batch is dropped, as the SDK's batcher does
		spans = spans[n:]
	}
	// Exporters do not keep the slice (the SDK's batcher reuses its own),
	// so it is emptied and kept for the next spans.
	clear(taken)
	b.mu.Lock()
	if b.spare == nil {
		b.spare = taken[:0]
	}
	b.mu.Unlock()
	return err
}

// fanOut hands each kept span to several processors (one batcher per
// exporter: a file and a collector locally).
type fanOut []sdktrace.SpanProcessor

var _ sdktrace.SpanProcessor = fanOut(nil)

func (f fanOut) OnStart(context.Context, sdktrace.ReadWriteSpan) {}

func (f fanOut) OnEnd(s sdktrace.ReadOnlySpan) {
	for _, p := range f {
		p.OnEnd(s)
	}
}

func (f fanOut) ForceFlush(ctx context.Context) error {
	var errs []error
	for _, p := range f {
		errs = append(errs, p.ForceFlush(ctx))
	}
	return errors.Join(errs...)
}

func (f fanOut) Shutdown(ctx context.Context) error {
	var errs []error
	for _, p := range f {
		errs = append(errs, p.Shutdown(ctx))
	}
	return errors.Join(errs...)
}
