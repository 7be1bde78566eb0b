package main

import (
	"bytes"
	"io"
	"sync"
)

// heldWriter holds what is written while the stack starts (the turn
// function's warnings of what its configuration leaves off) until
// release, so that the API's URL is the first line make run prints; then
// it writes it out and passes every write straight on.
type heldWriter struct {
	mu       sync.Mutex
	w        io.Writer
	held     bytes.Buffer
	released bool
}

func (h *heldWriter) Write(b []byte) (int, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.released {
		return h.held.Write(b)
	}
	return h.w.Write(b)
}

// release writes what was held and stops holding.
func (h *heldWriter) release() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.released {
		_, _ = h.w.Write(h.held.Bytes())
		h.released = true
	}
}
