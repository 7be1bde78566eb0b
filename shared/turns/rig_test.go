package turns_test

import (
	"bytes"
	"context"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/commonly/runtime/internal/dynamodblocal"
	"github.com/commonly/runtime/shared/metrics"
	"github.com/commonly/runtime/shared/money"
	"github.com/commonly/runtime/shared/runs"
	"github.com/commonly/runtime/shared/store"
	"github.com/commonly/runtime/shared/turns"
)

// The rules of the turn service, tested on the production store against
// the embedded DynamoDB; the API around them is tested in the handler.

var (
	tables = store.Tables{State: "state", Runs: "runs"}
	user   = turns.Caller{ID: "user-1"}
	other  = turns.Caller{ID: "user-2"}
	admin  = turns.Caller{ID: "backend", Service: true}
)

// knownTools stand for the native engine's catalog.
var knownTools = []string{"commonly_post_message", "commonly_run_code", "commonly_web_search", "github_get_issue"}

// clock is a settable clock.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time  { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) Set(t time.Time) { c.mu.Lock(); defer c.mu.Unlock(); c.t = t }
func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// engine answers every turn, or does what it is told instead.
type engine struct {
	mu    sync.Mutex
	calls int
	run   func(t turns.EngineTurn) turns.EngineResult
}

func (e *engine) Run(_ context.Context, t turns.EngineTurn) turns.EngineResult {
	e.mu.Lock()
	e.calls++
	run := e.run
	e.mu.Unlock()
	if run != nil {
		return run(t)
	}
	t.Run.FinalMessage = "answer to: " + t.Run.Message
	t.Run.AddCost(runs.Cost{ModelMicros: 42})
	t.Run.End(runs.StatusSucceeded, "", "", *t.Run.StartedAt)
	return turns.EngineResult{}
}

func (e *engine) count() int { e.mu.Lock(); defer e.mu.Unlock(); return e.calls }

type rigOpts struct {
	limits     string
	fallback   bool
	storeWrap  func(turns.Store) turns.Store
	dispatcher func(*turns.Worker) turns.Dispatcher
	engines    map[turns.EngineName]turns.Engine
	// installTTL turns the container's install cache on.
	installTTL time.Duration
	// spendCap, turnBound and minReservation set the spend cap.
	spendCap, turnBound, minReservation money.Micros
	// events writes a run's events between its own writes.
	events bool
	// handoff is the worker's Handoff.
	handoff turns.Dispatcher
}

type rig struct {
	db     *dynamodblocal.Server
	st     *store.Dynamo
	clock  *clock
	native *engine
	svc    *turns.Service
	worker *turns.Worker
	emf    *bytes.Buffer
}

func newRig(t *testing.T, o rigOpts) *rig {
	t.Helper()
	db, err := dynamodblocal.StartWithTables(context.Background(), "127.0.0.1:0", tables)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	st, err := store.New(store.Config{DB: db.Client(), Tables: tables})
	if err != nil {
		t.Fatal(err)
	}
	r := &rig{db: db, st: st, clock: &clock{t: time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)}, native: &engine{}, emf: &bytes.Buffer{}}
	var ts turns.Store = r.st
	if o.storeWrap != nil {
		ts = o.storeWrap(ts)
	}
	engines := o.engines
	if engines == nil {
		engines = map[turns.EngineName]turns.Engine{turns.Native: r.native}
	}
	emitter, err := metrics.New(metrics.Config{Writer: r.emf, Now: r.clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.DiscardHandler)
	installs, err := turns.NewInstallCache(turns.InstallCacheConfig{Store: ts, TTL: o.installTTL, Now: r.clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	wc := turns.WorkerConfig{Store: ts, Engines: engines, Installs: installs, Metrics: emitter, Now: r.clock.Now, Log: log, Handoff: o.handoff}
	if o.events {
		wc.Events = r.st
	}
	if r.worker, err = turns.NewWorker(wc); err != nil {
		t.Fatal(err)
	}
	var d turns.Dispatcher = turns.InlineDispatcher{Worker: r.worker}
	if o.dispatcher != nil {
		d = o.dispatcher(r.worker)
	}
	if o.limits == "" {
		o.limits = turns.DefaultLimits
	}
	limits, err := turns.ParseLimits(o.limits)
	if err != nil {
		t.Fatal(err)
	}
	if r.svc, err = turns.NewService(turns.ServiceConfig{Store: ts, Dispatcher: d, Limits: limits,
		SpendCap: o.spendCap, TurnBound: o.turnBound, MinReservation: o.minReservation,
		Tools: knownTools, Connectors: []string{"github"}, FallbackConfigured: o.fallback, Installs: installs, Metrics: emitter, Now: r.clock.Now, Log: log}); err != nil {
		t.Fatal(err)
	}
	return r
}

// install creates an install of userID through the service.
func (r *rig) install(t *testing.T, id, userID string, req turns.InstallRequest) *turns.Install {
	t.Helper()
	req.UserID, req.PodID, req.AgentName = userID, "pod-1", "helper"
	in, _, err := r.svc.PutInstall(context.Background(), admin, id, req)
	if err != nil {
		t.Fatalf("install %s: %v", id, err)
	}
	return in
}

func (r *rig) submit(c turns.Caller, installID, msg, key string) (*turns.Submitted, error) {
	return r.svc.Submit(context.Background(), c, installID, turns.TurnRequest{Message: msg, IdempotencyKey: key})
}

func (r *rig) usage(t *testing.T, c turns.Caller) *turns.UsageReport {
	t.Helper()
	u, err := r.svc.Usage(context.Background(), c)
	if err != nil {
		t.Fatal(err)
	}
	return u
}
