package main

import (
	"context"
	"io"
	"strings"
	"testing"
	"time"
)

// One turn through the whole path: every word reaches the client, each
// after it left the model, and the table says what was measured.
func TestMeasureOneTurn(t *testing.T) {
	results, err := measure(context.Background(), []time.Duration{50 * time.Millisecond}, 1, 12, 20*time.Millisecond, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	r := results[0]
	if len(r.latencies) != 12 || len(r.reads) == 0 || r.calls["UpdateItem"] == 0 {
		t.Fatalf("%d latencies, %d reads, calls %v", len(r.latencies), len(r.reads), r.calls)
	}
	for i, d := range r.latencies {
		if d <= 0 {
			t.Errorf("word %d arrived %s after it left", i, d)
		}
	}
	if table := render(results, 1, 12, 20*time.Millisecond); !strings.Contains(table, "| 50ms |") {
		t.Errorf("table:\n%s", table)
	}
}
