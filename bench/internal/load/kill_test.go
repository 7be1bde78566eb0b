package load

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// counted is a server that counts the requests that reached it.
func counted(t *testing.T) (*httptest.Server, *atomic.Int64) {
	t.Helper()
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		n.Add(1)
		_, _ = w.Write([]byte(`{}`))
	}))
	t.Cleanup(srv.Close)
	return srv, &n
}

// A killed invocation fails at once; from then on none of its calls
// reaches a server, each held until the run ends and then failed.
func TestAKilledWorkerReachesNothing(t *testing.T) {
	srv, reached := counted(t)
	k := newKills(0, 1)
	client := &http.Client{Transport: k.transport(http.DefaultTransport)}
	var inv *invocation
	started := make(chan struct{})
	calls := make(chan error, 1)
	run := k.invoke(func(ctx context.Context, _ []byte) error {
		inv = ctx.Value(invocationKey{}).(*invocation)
		inv.plan = &killPlan{point: KillAnytime}
		close(started)
		<-inv.dead // the worker goes on after its death, as a zombie would
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL+"/execute", nil)
		_, err := client.Do(req)
		calls <- err
		return nil
	})
	failed := make(chan error, 1)
	go func() { failed <- run(context.Background(), []byte(`{"dispatch":{"runId":"r1"}}`)) }()
	<-started
	k.kill(inv)
	if err := <-failed; !errors.Is(err, errKilled) {
		t.Fatalf("the killed invocation returned %v", err)
	}
	select {
	case err := <-calls:
		t.Fatalf("the dead worker's call returned before the run ended: %v", err)
	case <-time.After(100 * time.Millisecond):
	}
	k.stop()
	if err := <-calls; !errors.Is(err, errKilled) {
		t.Errorf("the dead worker's call, once released: %v", err)
	}
	if n := reached.Load(); n != 0 {
		t.Errorf("%d calls of the dead worker reached the server", n)
	}
	if got := k.killedRuns(); got["r1"] != KillAnytime {
		t.Errorf("killed runs %v", got)
	}
}

// A cut answer's request reached the table; only the SDK's first
// attempt of a call is cut, so that its retry gets through.
func TestACutAnswerWasApplied(t *testing.T) {
	srv, reached := counted(t)
	k := newKills(1, 1)
	send := func(attempt string) error {
		req, _ := http.NewRequest(http.MethodPost, srv.URL, nil)
		req.Header.Set("amz-sdk-request", "attempt="+attempt+"; max=3")
		req.Header.Set("X-Amz-Target", "DynamoDB_20120810.UpdateItem")
		resp, err := k.table(req, http.DefaultTransport.RoundTrip)
		if err == nil {
			_ = resp.Body.Close()
		}
		return err
	}
	if err := send("1"); !errors.Is(err, syscall.ECONNRESET) {
		t.Fatalf("first attempt: %v, want a reset connection", err)
	}
	if err := send("2"); err != nil {
		t.Fatalf("the retry: %v", err)
	}
	if n := reached.Load(); n != 2 {
		t.Errorf("%d requests reached the table, want 2", n)
	}
	if got := k.answersCut(); got["UpdateItem"] != 1 {
		t.Errorf("answers cut %v", got)
	}
}
