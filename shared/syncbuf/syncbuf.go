// Package syncbuf is a bytes.Buffer that goroutines may write while
// another reads it: the sink of a process's output or of a logger that
// a test or a tool reads as it runs.
package syncbuf

import (
	"bytes"
	"sync"
)

// Buffer is safe for concurrent use. The zero value is empty and ready.
type Buffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

// Write appends p.
func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

// String is what was written so far.
func (b *Buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}
