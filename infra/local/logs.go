package main

import (
	"context"
	"log/slog"
	"sync"
)

// heldLogs holds the records logged while the stack starts (the turn
// function's warnings of what its configuration leaves off) until
// release, so that the API's URL is the first line make run prints; then
// it passes every record straight on.
type heldLogs struct {
	next  slog.Handler
	state *heldState
}

type heldState struct {
	mu       sync.Mutex
	released bool
	held     []heldRecord
}

type heldRecord struct {
	h slog.Handler
	r slog.Record
}

func newHeldLogs(next slog.Handler) *heldLogs { return &heldLogs{next: next, state: &heldState{}} }

func (h *heldLogs) Enabled(ctx context.Context, l slog.Level) bool { return h.next.Enabled(ctx, l) }

func (h *heldLogs) Handle(ctx context.Context, r slog.Record) error {
	h.state.mu.Lock()
	if !h.state.released {
		h.state.held = append(h.state.held, heldRecord{h.next, r.Clone()})
		h.state.mu.Unlock()
		return nil
	}
	h.state.mu.Unlock()
	return h.next.Handle(ctx, r)
}

func (h *heldLogs) WithAttrs(as []slog.Attr) slog.Handler {
	return &heldLogs{next: h.next.WithAttrs(as), state: h.state}
}

func (h *heldLogs) WithGroup(name string) slog.Handler {
	return &heldLogs{next: h.next.WithGroup(name), state: h.state}
}

// release writes what was held, in order, and stops holding.
func (h *heldLogs) release() {
	h.state.mu.Lock()
	defer h.state.mu.Unlock()
	for _, r := range h.state.held {
		_ = r.h.Handle(context.Background(), r.r)
	}
	h.state.held, h.state.released = nil, true
}
