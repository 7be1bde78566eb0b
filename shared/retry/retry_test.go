package retry_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/commonly/runtime/shared/retry"
)

func TestCeilingDoublesUpToMax(t *testing.T) {
	b := retry.Backoff{Base: 5 * time.Millisecond, Max: 320 * time.Millisecond}
	want := []time.Duration{5, 10, 20, 40, 80, 160, 320, 320, 320}
	for i, w := range want {
		if got := b.Ceiling(i); got != w*time.Millisecond {
			t.Errorf("Ceiling(%d) = %v, want %v", i, got, w*time.Millisecond)
		}
	}
	if got := (retry.Backoff{Base: time.Second}).Ceiling(200); got <= 0 {
		t.Errorf("uncapped ceiling overflowed: %v", got)
	}
	if got := (retry.Backoff{}).Ceiling(3); got != 0 {
		t.Errorf("zero Backoff ceiling = %v", got)
	}
	if got := b.Ceiling(-1); got != b.Base {
		t.Errorf("Ceiling(-1) = %v, want Base", got)
	}
}

func TestDelayIsFullJitterBelowTheCeiling(t *testing.T) {
	var asked []int64
	b := retry.Backoff{Base: 10 * time.Millisecond, Max: 40 * time.Millisecond, Rand: func(n int64) int64 {
		asked = append(asked, n)
		return n - 1 // the largest draw
	}}
	for i := range 4 {
		if got, ceil := b.Delay(i), b.Ceiling(i); got != ceil-1 {
			t.Errorf("Delay(%d) = %v, want just under %v", i, got, ceil)
		}
	}
	want := []int64{int64(10 * time.Millisecond), int64(20 * time.Millisecond), int64(40 * time.Millisecond), int64(40 * time.Millisecond)}
	for i := range want {
		if asked[i] != want[i] {
			t.Errorf("draw %d over [0,%d), want [0,%d)", i, asked[i], want[i])
		}
	}
	// The default source stays within the range.
	b.Rand = nil
	for range 100 {
		if d := b.Delay(0); d < 0 || d >= 10*time.Millisecond {
			t.Fatalf("Delay(0) = %v, want in [0, 10ms)", d)
		}
	}
}

func TestWaitUsesTheInjectedSleep(t *testing.T) {
	var slept []time.Duration
	b := retry.Backoff{Base: 8 * time.Millisecond, Rand: func(n int64) int64 { return n / 2 },
		Sleep: func(_ context.Context, d time.Duration) error { slept = append(slept, d); return nil }}
	for i := range 3 {
		if err := b.Wait(context.Background(), i); err != nil {
			t.Fatal(err)
		}
	}
	if len(slept) != 3 || slept[0] != 4*time.Millisecond || slept[2] != 16*time.Millisecond {
		t.Errorf("slept %v", slept)
	}
}

func TestWaitEndsWithTheContext(t *testing.T) {
	b := retry.Backoff{Base: time.Hour, Rand: func(n int64) int64 { return n - 1 }}

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	called := false
	done := b
	done.Sleep = func(context.Context, time.Duration) error { called = true; return nil }
	if err := done.Wait(ctx, 0); !errors.Is(err, context.Canceled) || called {
		t.Errorf("done context: %v (sleep called %v), want Canceled without sleeping", err, called)
	}

	// A cancellation during the wait wakes it: the hour-long timer never fires.
	ctx, cancel = context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { errc <- b.Wait(ctx, 0) }()
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled wait: %v", err)
	}
}

func TestSleep(t *testing.T) {
	if err := retry.Sleep(context.Background(), 0); err != nil {
		t.Errorf("zero sleep: %v", err)
	}
	if err := retry.Sleep(context.Background(), time.Nanosecond); err != nil {
		t.Errorf("short sleep: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := retry.Sleep(ctx, time.Hour); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled sleep: %v", err)
	}
}
