package local

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/commonly/runtime/shared/sandbox"
)

// TestCapacity: past MaxSessions, Create waits for a session to end; it
// gives up with ErrUnavailable after QueueWait, or with ctx's error.
func TestCapacity(t *testing.T) {
	p := newProvider(t, Config{MaxSessions: 1, QueueWait: time.Millisecond})
	first := create(t, p)

	if _, err := p.Create(context.Background(), sandbox.Meta{}); !errors.Is(err, sandbox.ErrUnavailable) {
		t.Fatalf("second sandbox at capacity: %v, want ErrUnavailable", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	p.cfg.QueueWait = time.Hour
	if _, err := p.Create(ctx, sandbox.Meta{}); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled wait: %v, want context.Canceled", err)
	}

	// A waiting Create gets the slot the first session gives back.
	got := make(chan error, 1)
	go func() {
		s, err := p.Create(context.Background(), sandbox.Meta{})
		if err == nil {
			_, err = s.Execute(context.Background(), sandbox.Python, "1")
			_ = s.Kill(context.Background())
		}
		got <- err
	}()
	if err := first.Kill(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := <-got; err != nil {
		t.Errorf("Create after a Kill: %v", err)
	}

	// The lifetime's kill gives the slot back too.
	timers := make(chan func(), 1)
	p.afterFunc = func(_ time.Duration, f func()) stopper { timers <- f; return &expiry{} }
	create(t, p)
	(<-timers)()
	create(t, p) // fails the test if the slot is still taken
	<-timers
}
