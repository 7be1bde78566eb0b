package runs

import (
	"strings"
	"testing"
	"time"
)

func TestEnd(t *testing.T) {
	r := &Run{Status: StatusRunning}
	at := time.Date(2026, 12, 2, 13, 0, 0, 0, time.FixedZone("CET", 3600))
	r.End(StatusFailed, ErrLLM, strings.Repeat("x", MaxErrorMessage+10), at)
	if r.Status != StatusFailed || r.ErrorKind != ErrLLM || len(r.ErrorMessage) > MaxErrorMessage || r.CompletedAt == nil ||
		!r.CompletedAt.Equal(at) || r.CompletedAt.Location() != time.UTC || !r.Status.Final() {
		t.Fatalf("run = %+v", r)
	}
	r.End(StatusSucceeded, "", "", at)
	if r.ErrorKind != "" || r.ErrorMessage != "" {
		t.Fatalf("success keeps an error: %+v", r)
	}
}
