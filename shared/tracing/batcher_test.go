package tracing

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/otel"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

// batchExporter records the size of each export.
type batchExporter struct {
	mu      sync.Mutex
	batches []int
	fail    error
	done    chan struct{}
}

func (e *batchExporter) ExportSpans(_ context.Context, spans []sdktrace.ReadOnlySpan) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.batches = append(e.batches, len(spans))
	if e.done != nil {
		close(e.done)
		e.done = nil
	}
	return e.fail
}

func (e *batchExporter) Shutdown(context.Context) error { return nil }

func (e *batchExporter) sizes() []int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]int(nil), e.batches...)
}

func spansOf(n int) []sdktrace.ReadOnlySpan {
	stubs := make(tracetest.SpanStubs, n)
	for i := range stubs {
		stubs[i].Name = "s"
	}
	return stubs.Snapshots()
}

// Spans wait for a flush, which exports them in the flushing goroutine,
// in batches of at most maxExportBatch.
func TestBatcherExportsAtTheFlush(t *testing.T) {
	exp := &batchExporter{}
	b := newBatcher(exp)
	for _, s := range spansOf(maxExportBatch - 1) {
		b.OnEnd(s)
	}
	if got := exp.sizes(); len(got) != 0 {
		t.Fatalf("exported %v before the flush", got)
	}
	if err := b.ForceFlush(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := exp.sizes(); len(got) != 1 || got[0] != maxExportBatch-1 {
		t.Fatalf("exported %v, want one batch of %d", got, maxExportBatch-1)
	}
	if err := b.ForceFlush(context.Background()); err != nil || len(exp.sizes()) != 1 {
		t.Fatalf("an empty flush exported: %v %v", exp.sizes(), err)
	}
}

// A process that does not flush still exports, each maxExportBatch spans;
// past maxQueuedSpans held, spans are dropped and reported.
func TestBatcherBounds(t *testing.T) {
	done := make(chan struct{})
	exp := &batchExporter{done: done}
	b := newBatcher(exp)
	for _, s := range spansOf(maxExportBatch) {
		b.OnEnd(s)
	}
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("a full batch was not exported without a flush")
	}

	var reported []error
	var mu sync.Mutex
	otel.SetErrorHandler(otel.ErrorHandlerFunc(func(err error) { mu.Lock(); reported = append(reported, err); mu.Unlock() }))
	t.Cleanup(func() { otel.SetErrorHandler(otel.ErrorHandlerFunc(func(error) {})) })
	held := &batcher{exp: &batchExporter{}}
	held.spans = spansOf(maxQueuedSpans) // held already (as if exports had stalled)
	for _, s := range spansOf(3) {
		held.OnEnd(s)
	}
	if err := held.ForceFlush(context.Background()); err != nil {
		t.Fatal(err)
	}
	got := held.exp.(*batchExporter).sizes()
	if len(got) != maxQueuedSpans/maxExportBatch || got[0] != maxExportBatch {
		t.Errorf("exported %v, want %d batches of %d", got, maxQueuedSpans/maxExportBatch, maxExportBatch)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(reported) != 1 || !strings.Contains(reported[0].Error(), "3 spans dropped") {
		t.Errorf("reported %v", reported)
	}
}

// A failed export is returned and its spans dropped; after Shutdown, new
// spans are not held.
func TestBatcherFailureAndShutdown(t *testing.T) {
	exp := &batchExporter{fail: errors.New("collector down")}
	b := newBatcher(exp)
	for _, s := range spansOf(2) {
		b.OnEnd(s)
	}
	if err := b.ForceFlush(context.Background()); err == nil || !strings.Contains(err.Error(), "collector down") {
		t.Fatalf("flush: %v", err)
	}
	exp.fail = nil
	b.OnEnd(spansOf(1)[0])
	if err := b.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	b.OnEnd(spansOf(1)[0])
	if err := b.ForceFlush(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := exp.sizes(); len(got) != 2 || got[0] != 2 || got[1] != 1 {
		t.Errorf("exported %v, want [2 1]", got)
	}
}
