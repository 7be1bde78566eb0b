package turnstack

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestRequestErrorsNameTheRequest: a turn's or the floor's request
// answered other than 200 fails with its label, status and body.
func TestRequestErrorsNameTheRequest(t *testing.T) {
	var keys []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		keys = append(keys, r.Header.Get("Idempotency-Key"))
		http.Error(w, "busy", http.StatusServiceUnavailable)
	}))
	defer srv.Close()
	c, err := NewClient(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := c.Turn(ctx); err == nil || !strings.HasPrefix(err.Error(), "turn: 503 busy") {
		t.Errorf("turn: %v", err)
	}
	if err := c.Floor(ctx); err == nil || !strings.HasPrefix(err.Error(), "floor: 503 busy") {
		t.Errorf("floor: %v", err)
	}
	key, _, err := c.TurnRequest(ctx)
	if err == nil || len(keys) != 3 || keys[2] != key || keys[0] == keys[1] {
		t.Errorf("keys %q, returned %q, %v", keys, key, err)
	}
}
