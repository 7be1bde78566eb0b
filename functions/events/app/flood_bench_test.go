package app_test

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/commonly/runtime/functions/events/app"
	"github.com/commonly/runtime/functions/events/handler"
	"github.com/commonly/runtime/infra/awslocal/cognitolocal"
	"github.com/commonly/runtime/shared/runs"
	"github.com/commonly/runtime/shared/turns"
)

// countingRuns is a run store that counts its reads: a refused request
// must make none.
type countingRuns struct{ reads atomic.Int64 }

func (c *countingRuns) GetRun(context.Context, string) (*runs.Run, error) {
	c.reads.Add(1)
	return nil, turns.ErrNotFound
}

// BenchmarkUnauthenticatedFlood is what a flood of requests without a
// valid token costs the events function, by what they carry: each is
// answered 401 by the handler with the production verifier (go-oidc, the
// issuer's keys fetched once), with no DynamoDB call (ddb-calls/op).
// docs/benchmarks.md, "How late is live", turns it into Lambda's bill.
func BenchmarkUnauthenticatedFlood(b *testing.B) {
	pool, err := cognitolocal.Start("commonly-turns")
	if err != nil {
		b.Fatal(err)
	}
	defer pool.Close()
	ctx := context.Background()
	v, err := app.NewOIDCVerifier(ctx, pool.URL, []string{pool.ClientID})
	if err != nil {
		b.Fatal(err)
	}
	store := &countingRuns{}
	w, err := turns.NewWatcher(turns.WatcherConfig{Runs: store})
	if err != nil {
		b.Fatal(err)
	}
	h, err := handler.New(handler.Config{Watcher: w, Verifier: v, Log: discard()})
	if err != nil {
		b.Fatal(err)
	}
	expired, err := pool.AccessToken("user-1", nil, -time.Minute)
	if err != nil {
		b.Fatal(err)
	}
	other, err := cognitolocal.Start("commonly-turns") // same shape, another key
	if err != nil {
		b.Fatal(err)
	}
	defer other.Close()
	forged, err := other.AccessToken("user-1", nil, time.Hour)
	if err != nil {
		b.Fatal(err)
	}
	for _, c := range []struct{ name, auth string }{
		{"no-token", ""},
		{"not-a-jwt", "Bearer x"},
		{"forged-signature", "Bearer " + forged},
		{"expired", "Bearer " + expired},
	} {
		b.Run(c.name, func(b *testing.B) {
			req := httptest.NewRequest(http.MethodGet, "/v1/runs/run-1/events", nil)
			if c.auth != "" {
				req.Header.Set("Authorization", c.auth)
			}
			before := store.reads.Load()
			cpu0 := cpuTime()
			b.ReportAllocs()
			for b.Loop() {
				rec := httptest.NewRecorder()
				h.ServeHTTP(rec, req)
				if rec.Code != http.StatusUnauthorized {
					b.Fatalf("%d %s", rec.Code, rec.Body)
				}
			}
			// CPU, not wall time: the figure a noisy shared machine keeps.
			b.ReportMetric(float64((cpuTime()-cpu0).Microseconds())/float64(b.N), "cpu-µs/op")
			b.ReportMetric(float64(store.reads.Load()-before)/float64(b.N), "ddb-calls/op")
		})
	}
}

func discard() *slog.Logger { return slog.New(slog.DiscardHandler) }

// cpuTime is the process's user and system CPU time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
