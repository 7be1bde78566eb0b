package reaper_test

import (
	"context"
	"fmt"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/commonly/runtime/internal/awscalls"
	"github.com/commonly/runtime/internal/dynamodblocal"
	"github.com/commonly/runtime/shared/reaper"
	"github.com/commonly/runtime/shared/runs"
	"github.com/commonly/runtime/shared/sandbox"
	"github.com/commonly/runtime/shared/sandbox/e2b"
	"github.com/commonly/runtime/shared/sandbox/e2b/e2btest"
	"github.com/commonly/runtime/shared/store"
	"github.com/commonly/runtime/shared/turns"
	"github.com/commonly/runtime/shared/utcday"
)

// opCounter counts DynamoDB calls, through awscalls' counting middleware
// on the client the store uses.
type opCounter struct{ n atomic.Int64 }

func (c *opCounter) option(o *dynamodb.Options) {
	o.APIOptions = append(o.APIOptions, awscalls.Counting(func(string) { c.n.Add(1) }))
}

func (c *opCounter) total() int { return int(c.n.Load()) }

// BenchmarkSweep is one sweep on the production parts: the E2B client
// against the fake E2B, the store against the embedded DynamoDB, the
// Reclaimer; default concurrency (8 kills, 4 runs in flight). "both" is
// issue 13's: a deployment with 1,000 of its sandboxes listed by E2B (10
// pages; 500 past their lifetime, each left by a worker that died, 500
// young), all recorded on the state table, and 1,000 abandoned runs
// (claimed, one model call checkpointed; 500 of them the dead workers'
// with those sandboxes, every other one refunded). "sandboxes" and
// "runs" are its two halves alone. One op is the whole sweep; its setup
// (a fresh E2B and DynamoDB) is not timed. e2b-calls and ddb-calls are
// per sweep; time and allocations include the in-process fake E2B and
// embedded DynamoDB serving the sweep.
func BenchmarkSweep(b *testing.B) {
	for _, c := range []struct {
		name                     string
		sandboxes, expired, open int
	}{{"both", 1000, 500, 1000}, {"sandboxes", 1000, 500, 0}, {"runs", 0, 0, 1000}} {
		b.Run(c.name, func(b *testing.B) { benchSweep(b, c.sandboxes, c.expired, c.open) })
	}
}

func benchSweep(b *testing.B, sandboxes, expired, open int) {
	ctx := context.Background()
	tables := store.Tables{State: "state", Runs: "runs"}
	var e2bCalls, ddbCalls int
	b.ReportAllocs()
	for range b.N {
		b.StopTimer()
		db, err := dynamodblocal.StartWithTables(ctx, "127.0.0.1:0", tables)
		if err != nil {
			b.Fatal(err)
		}
		counter := &opCounter{}
		st, err := store.New(store.Config{DB: db.Client(counter.option), Tables: tables})
		if err != nil {
			b.Fatal(err)
		}
		f := e2btest.Start(b)
		now := t0
		clock := func() time.Time { return now }
		f.SetClock(clock)
		cfg := f.ClientConfig()
		cfg.Now = clock
		api, err := e2b.New(cfg)
		if err != nil {
			b.Fatal(err)
		}
		admitted := t0.Add(-turns.RunMaxLife - time.Minute)
		for j := range open {
			id := fmt.Sprintf("run-%d", j)
			r := &runs.Run{RunID: id, InstallID: "inst-1", UserID: fmt.Sprintf("user-%d", j%50), Engine: "native", Message: "hi",
				Day: utcday.Of(admitted), Status: runs.StatusQueued, CreatedAt: admitted, Steps: []runs.Step{}}
			if res, err := st.Admit(ctx, turns.Admission{Plan: turns.PlanFree, Run: r, Limit: 1 << 30, Now: admitted}); err != nil || !res.Admitted {
				b.Fatalf("admit: %+v %v", res, err)
			}
			claimed, err := st.ClaimRun(ctx, id, admitted)
			if err != nil {
				b.Fatal(err)
			}
			step := runs.Step{Model: "deepseek-v4-flash", PromptTokens: 1800, CompletionTokens: 240, CostMicros: 1200, Estimated: j%2 == 1}
			claimed.Steps = append(claimed.Steps, step)
			claimed.AddCost(runs.Cost{ModelMicros: step.CostMicros})
			if err := st.CheckpointRun(ctx, claimed, nil); err != nil {
				b.Fatal(err)
			}
		}
		for j := range sandboxes {
			started, runID := t0.Add(-time.Duration(j)*time.Second/10), fmt.Sprintf("live-%d", j)
			if j < expired {
				started, runID = admitted.Add(time.Duration(j)*time.Millisecond), fmt.Sprintf("run-%d", j)
			}
			id := f.Seed(e2btest.Seeded{StartedAt: started, EndAt: t0.Add(time.Hour), Metadata: e2b.Metadata(e2btest.DefaultStage, runID, "u", "i", started)})
			if err := st.SandboxCreated(ctx, sandbox.NewRecord(e2b.ProviderName, id, sandbox.Meta{RunID: runID, UserID: "u"}, started)); err != nil {
				b.Fatal(err)
			}
		}
		rc, err := turns.NewReclaimer(turns.ReclaimerConfig{Store: st, Now: clock, Log: slog.New(slog.DiscardHandler)})
		if err != nil {
			b.Fatal(err)
		}
		rp, err := reaper.New(reaper.Config{Stage: e2btest.DefaultStage, Providers: []sandbox.Inventory{api}, Registry: st, Runs: rc, Now: clock, Log: slog.New(slog.DiscardHandler)})
		if err != nil {
			b.Fatal(err)
		}
		ddbBefore, e2bBefore := counter.total(), f.Calls()
		b.StartTimer()

		rep, err := rp.Sweep(ctx)

		b.StopTimer()
		if err != nil || rep.Listed != sandboxes || rep.Killed != expired || rep.RunsInterrupted != open || rep.Left+rep.RunsLeft != 0 {
			b.Fatalf("sweep: %+v, %v", rep, err)
		}
		ddbCalls += counter.total() - ddbBefore
		for op, n := range f.Calls() {
			e2bCalls += n - e2bBefore[op]
		}
		f.Close()
		_ = db.Close()
		b.StartTimer()
	}
	b.ReportMetric(float64(e2bCalls)/float64(b.N), "e2b-calls/op")
	b.ReportMetric(float64(ddbCalls)/float64(b.N), "ddb-calls/op")
}
