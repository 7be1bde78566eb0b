package load

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/commonly/runtime/bench/internal/turnstack"
	"github.com/commonly/runtime/infra/localstack"
	"github.com/commonly/runtime/shared/money"
	"github.com/commonly/runtime/shared/turns"
)

// Result is a run's outcome: its checks and measurements.
type Result struct {
	Checks   []string
	Failed   int
	Measured Measured
}

// Run starts the stack, drives the users' turns with faults, waits for
// every run to close, reads everything back and checks the invariants.
// It writes the report to cfg.Out as it goes.
func Run(ctx context.Context, cfg Config) (*Result, error) {
	if err := cfg.check(); err != nil {
		return nil, err
	}
	limits, err := turns.ParseLimits(cfg.Ceilings)
	if err != nil {
		return nil, fmt.Errorf("ceilings: %w", err)
	}
	threshold, err := money.FromUSD(cfg.AlarmUSD)
	if err != nil {
		return nil, fmt.Errorf("alarm: %w", err)
	}
	var spendCap money.Micros
	if cfg.CapUSD != "" {
		if spendCap, err = money.FromUSD(cfg.CapUSD); err != nil {
			return nil, fmt.Errorf("cap: %w", err)
		}
	}
	log := slog.New(slog.NewJSONHandler(cfg.Log, &slog.HandlerOptions{Level: slog.LevelWarn}))
	st, err := startStack(ctx, cfg, log)
	if err != nil {
		return nil, err
	}
	defer st.close()

	schemas, err := describeSchemas(ctx, st.plain, turnstack.Tables.State, turnstack.Tables.Runs)
	if err != nil {
		return nil, err
	}
	obs := &observer{usage: newUsage(schemas), runsTable: turnstack.Tables.Runs}
	for fn, c := range st.calls {
		c.Observe(obs.observe(fn))
	}

	c, err := newClient(st.APIURL, []byte(turnstack.Secret), cfg.ClientTimeout, cfg.Concurrency)
	if err != nil {
		return nil, err
	}
	rng := rand.New(rand.NewPCG(cfg.Seed, cfg.Seed^0x9e3779b97f4a7c15))
	users, plan := makeUsers(cfg, limits, rng)
	fmt.Fprintf(cfg.Out, "load: %d users (%s), %d installs each, %d turns planned, concurrency %d, rate %s, faults %.0f%%, clock ×%g\n",
		len(users), roleCounts(users), cfg.InstallsPerUser, len(plan), cfg.Concurrency, rateLabel(cfg.Rate), 100*cfg.FaultRate, cfg.Speed)
	if err := setUp(ctx, c, users); err != nil {
		return nil, fmt.Errorf("set up users: %w", err)
	}
	obs.reset()
	st.sweeps.mu.Lock()
	sweepsBefore := st.sweeps.n
	st.sweeps.mu.Unlock()

	inj := newInjected()
	bg, stopBG := context.WithCancel(ctx)
	var bgDone sync.WaitGroup
	var peakOpen atomic.Int64
	bgDone.Go(func() { background(bg, cfg, st, inj, &peakOpen) })

	start := time.Now()
	results := drive(ctx, cfg, st, c, plan, inj)
	elapsed := time.Since(start)
	fmt.Fprintf(cfg.Out, "load: %d turns driven in %s; draining\n", len(results), elapsed.Round(time.Millisecond))

	drained := drain(ctx, cfg, st)
	stopBG()
	bgDone.Wait()
	st.stall.release()
	settled := settle(ctx, st)
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	snap, err := readBack(ctx, st)
	if err != nil {
		return nil, err
	}
	f := facts{
		plans: map[string]turns.Plan{}, limits: limits, threshold: threshold, spendCap: spendCap,
		keyRuns: map[string]map[string]bool{}, faults: map[string]Fault{},
		turnRuns: map[string]string{}, killed: st.kills.killedRuns(),
	}
	for _, u := range users {
		f.plans[u.id] = u.plan
	}
	for _, d := range results {
		for _, a := range d.attempts {
			if a.runID == "" {
				continue
			}
			f.turnRuns[turnID(d.user.id, d.n)] = a.runID
			if f.keyRuns[d.key] == nil {
				f.keyRuns[d.key] = map[string]bool{}
			}
			f.keyRuns[d.key][a.runID] = true
			f.faults[a.runID] = d.dir.Fault
		}
	}
	st.sweeps.mu.Lock()
	f.lateSandboxes, f.sandboxesChecked = append([]string(nil), st.sweeps.late...), st.sweeps.checked
	st.sweeps.mu.Unlock()

	res := &Result{}
	r := report{cfg: cfg, results: results, snap: snap, elapsed: elapsed, drained: drained, settled: settled, st: st, inj: inj, obs: obs,
		peakOpen: int(peakOpen.Load()), sweepsBefore: sweepsBefore}
	r.print(cfg.Out)
	for _, ch := range invariants(snap, f) {
		line := ch.String()
		fmt.Fprintln(cfg.Out, line)
		res.Checks = append(res.Checks, line)
		if !ch.ok() {
			res.Failed++
		}
	}
	res.Measured = r.measured()
	return res, nil
}

func rateLabel(r float64) string {
	if r <= 0 {
		return "unbounded"
	}
	return fmt.Sprintf("%g/s", r)
}

func roleCounts(users []*user) string {
	n := map[string]int{}
	for _, u := range users {
		n[string(u.role)+" "+string(u.plan)]++
	}
	var parts []string
	for _, k := range []string{"light free", "light pro", "ceiling free", "spender pro"} {
		if n[k] > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n[k], k))
		}
	}
	return strings.Join(parts, ", ")
}

// background injects the faults that are not a turn's (EventBridge puts
// failing, leaked sandboxes) and samples the open runs, until ctx ends.
func background(ctx context.Context, cfg Config, st *stack, inj *injected, peak *atomic.Int64) {
	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()
	var lastBus, lastLeak time.Time
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-tick.C:
			if n, err := openRuns(ctx, st.plain, st.Turn.Store.IndexShards()); err == nil && int64(n) > peak.Load() {
				peak.Store(int64(n))
			}
			if cfg.FaultRate <= 0 {
				continue
			}
			if now.Sub(lastBus) >= time.Second {
				st.busFaults.tick(st.Bus)
				lastBus = now
			}
			if now.Sub(lastLeak) >= 10*time.Second {
				seedLeak(st)
				inj.add("sandbox-leaked", 1)
				lastLeak = now
			}
		}
	}
}

// drain waits for every run to close (the reaper closes the abandoned
// ones), up to cfg.Drain; it says how long it took.
func drain(ctx context.Context, cfg Config, st *stack) time.Duration {
	start := time.Now()
	for time.Since(start) < cfg.Drain && ctx.Err() == nil {
		if n, err := openRuns(ctx, st.plain, st.Turn.Store.IndexShards()); err == nil && n == 0 {
			break
		}
		time.Sleep(250 * time.Millisecond)
	}
	return time.Since(start)
}

// settleLimit bounds the wait for the alarm function to catch up.
const settleLimit = 10 * time.Minute

// settle waits until the alarm function has taken the final record of
// every run (the stream's last records), and the reaper has swept once
// more; it says how long the alarm took to catch up.
func settle(ctx context.Context, st *stack) time.Duration {
	start := time.Now()
	deadline := start.Add(settleLimit)
	total := -1
	for time.Now().Before(deadline) && ctx.Err() == nil {
		if total < 0 {
			if n, err := countRuns(ctx, st.plain); err == nil {
				total = n
			}
		}
		if total >= 0 && st.streams.closedRuns() >= total {
			break
		}
		time.Sleep(250 * time.Millisecond)
	}
	caughtUp := time.Since(start)
	st.sweeps.mu.Lock()
	n := st.sweeps.n
	st.sweeps.mu.Unlock()
	for time.Now().Before(deadline) && ctx.Err() == nil {
		st.sweeps.mu.Lock()
		swept := st.sweeps.n > n
		st.sweeps.mu.Unlock()
		if swept {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	return caughtUp
}

func (o *observer) reset() {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.usage = newUsage(o.usage.schemas)
	o.admissions = nil
}

func (o *observer) observe(function string) func(context.Context, localstack.Observed) {
	return func(ctx context.Context, c localstack.Observed) {
		o.mu.Lock()
		defer o.mu.Unlock()
		o.usage.call(function, c.Op, c.Input, c.Output, c.Err == nil)
		if c.Err != nil || !isAdmission(c.Input, o.runsTable) {
			return
		}
		if t, ok := ctx.Value(startKey{}).(time.Time); ok {
			o.admissions = append(o.admissions, time.Since(t))
		}
	}
}

// isAdmission: the transaction that creates a run (its Put on the runs
// table, only if new).
func isAdmission(in any, runsTable string) bool {
	tw, ok := in.(*dynamodb.TransactWriteItemsInput)
	if !ok {
		return false
	}
	for _, it := range tw.TransactItems {
		if it.Put != nil && aws.ToString(it.Put.TableName) == runsTable && strings.HasPrefix(aws.ToString(it.Put.ConditionExpression), "attribute_not_exists") {
			return true
		}
	}
	return false
}
