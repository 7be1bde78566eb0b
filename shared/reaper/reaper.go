// Package reaper is the backstop behind two promises: no code sandbox
// outlives its lifetime by more than a sweep, and every run reaches a
// final status whatever happened to its worker. A sweep reads every
// source of sandboxes (each provider's list of this deployment's
// sandboxes through the provider-neutral sandbox.Inventory: E2B's in AWS,
// the local provider's sessions locally; and the state table's
// live-sandbox index), kills each one past its lifetime, and closes the
// runs abandoned by their
// workers (turns.Reclaimer), killing their sandboxes too. It runs every
// minute: in AWS as the reaper function, locally on the stack's ticker.
package reaper

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/commonly/runtime/shared/metrics"
	"github.com/commonly/runtime/shared/sandbox"
	"github.com/commonly/runtime/shared/turns"
)

// Defaults of Config.
const (
	// DefaultGrace is added to the lifetime before a sandbox is killed:
	// E2B stamps startedAt with its clock and we decide with ours.
	DefaultGrace = 15 * time.Second
	// DefaultDeadline bounds a sweep: below the function's 55 s timeout
	// (infra/cdk), so a sweep always ends and reports; what it did not
	// reach is the next sweep's, a minute later.
	DefaultDeadline = 45 * time.Second
	// DefaultKillConcurrency bounds the kills in flight (E2B's API and
	// the marks on the state table).
	DefaultKillConcurrency = 8
	// DefaultRunConcurrency bounds the runs being closed at once.
	DefaultRunConcurrency = 4
	// DefaultRecordLimit bounds the expired records read per sweep from
	// each shard of the live index (3,200 a sweep at the default 32
	// shards, more than 8 kills in flight finish within the deadline).
	DefaultRecordLimit = 100
	// DefaultRunLimit bounds the abandoned runs listed per sweep from each
	// shard of the open-runs index.
	DefaultRunLimit = 100
	// markTimeout bounds marking a record killed after its kill: a
	// detached write, so that a sweep cut by its deadline between the two
	// still records what it killed.
	markTimeout = 5 * time.Second
)

// Registry is the state table's record of every sandbox created.
type Registry interface {
	// ExpiredSandboxes lists running records of one shard of the live
	// index whose expiry is at or before bound, oldest first, at most
	// limit.
	ExpiredSandboxes(ctx context.Context, shard int, bound time.Time, limit int32) ([]sandbox.Record, error)
	// IndexShards is how many shards the live index has (0 to n-1).
	IndexShards() int
	// MarkSandboxKilled marks a running record killed, conditionally:
	// false (no error) when there is none or it is marked already.
	MarkSandboxKilled(ctx context.Context, sandboxID string, at time.Time) (bool, error)
}

// Runs closes abandoned runs (turns.Reclaimer).
type Runs interface {
	// Abandoned lists the open runs of one shard past
	// turns.RunMaxLife, oldest first; with an error, the runs listed
	// before it.
	Abandoned(ctx context.Context, shard, limit int) ([]turns.OpenRun, error)
	// Shards is how many shards the open-runs index has (0 to n-1).
	Shards() int
	// Interrupt closes one if it is still open; Closed false is an
	// outcome (someone else closed it first).
	Interrupt(ctx context.Context, runID string) (turns.Interruption, error)
}

// The adapters' checks against sandbox.Inventory and Registry stand
// beside them (shared/sandbox/e2b, shared/sandbox/local, shared/store),
// so the reaper imports no adapter.
var _ Runs = (*turns.Reclaimer)(nil)

// Config configures a Reaper. Zero values are the documented defaults.
type Config struct {
	// Stage is the deployment whose sandboxes are ours (each provider's
	// list says whose each is): required with Providers; nothing of
	// another stage is ever killed.
	Stage string
	// Providers list and kill their sandboxes, each through its adapter
	// (E2B's client in AWS; the local provider in the local stack, whose
	// sessions live in its process). None: only the state table's
	// records are read, and nothing can be killed.
	Providers []sandbox.Inventory
	// Registry is the state table's sandbox records; required.
	Registry Registry
	// Runs closes abandoned runs; nil closes none.
	Runs Runs
	// Lifetime is how long a sandbox may live (SANDBOX_LIFETIME); default
	// sandbox.Lifetime. Grace is added before a kill; default DefaultGrace.
	Lifetime time.Duration
	Grace    time.Duration
	// Deadline bounds a sweep; default DefaultDeadline.
	Deadline time.Duration
	// KillConcurrency and RunConcurrency bound the work in flight;
	// defaults DefaultKillConcurrency and DefaultRunConcurrency.
	KillConcurrency int
	RunConcurrency  int
	// RecordLimit and RunLimit bound what one sweep reads of each shard
	// of the live index and of the open runs (the shards are read side by
	// side, each to its own bound); defaults DefaultRecordLimit and
	// DefaultRunLimit. The rest is the next sweep's.
	RecordLimit int
	RunLimit    int
	// Now is the clock; nil is time.Now.
	Now func() time.Time
	// Log gets one line per sweep and one per failure; nil is
	// slog.Default().
	Log *slog.Logger
	// Metrics gets one EMF event per sweep; nil discards.
	Metrics *metrics.Emitter
}

// Reaper sweeps. It is safe for concurrent use, though one sweep at a
// time is what it is for.
type Reaper struct {
	cfg     Config
	killers map[string]sandbox.Inventory // by provider name (sandbox.Record.Provider)
}

// New checks cfg and fills its defaults.
func New(cfg Config) (*Reaper, error) {
	var errs []error
	if cfg.Registry == nil {
		errs = append(errs, errors.New("reaper: a registry (the state table) is required"))
	}
	if len(cfg.Providers) > 0 && cfg.Stage == "" {
		errs = append(errs, errors.New("reaper: a stage is required to list a provider's sandboxes (only this stage's are ours)"))
	}
	for _, d := range []struct {
		name string
		v    time.Duration
	}{{"lifetime", cfg.Lifetime}, {"grace", cfg.Grace}, {"deadline", cfg.Deadline}} {
		if d.v < 0 {
			errs = append(errs, fmt.Errorf("reaper: %s %v is negative", d.name, d.v))
		}
	}
	for _, n := range []struct {
		name string
		v    int
	}{{"kill concurrency", cfg.KillConcurrency}, {"run concurrency", cfg.RunConcurrency}, {"record limit", cfg.RecordLimit}, {"run limit", cfg.RunLimit}} {
		if n.v < 0 {
			errs = append(errs, fmt.Errorf("reaper: %s %d is negative", n.name, n.v))
		}
	}
	if cfg.RecordLimit > 1<<31-1 {
		errs = append(errs, fmt.Errorf("reaper: record limit %d is too large", cfg.RecordLimit))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	if cfg.Lifetime == 0 {
		cfg.Lifetime = sandbox.Lifetime
	}
	if cfg.Grace == 0 {
		cfg.Grace = DefaultGrace
	}
	if cfg.Deadline == 0 {
		cfg.Deadline = DefaultDeadline
	}
	if cfg.KillConcurrency == 0 {
		cfg.KillConcurrency = DefaultKillConcurrency
	}
	if cfg.RunConcurrency == 0 {
		cfg.RunConcurrency = DefaultRunConcurrency
	}
	if cfg.RecordLimit == 0 {
		cfg.RecordLimit = DefaultRecordLimit
	}
	if cfg.RunLimit == 0 {
		cfg.RunLimit = DefaultRunLimit
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	r := &Reaper{cfg: cfg, killers: map[string]sandbox.Inventory{}}
	for _, p := range cfg.Providers {
		r.killers[p.Provider()] = p
	}
	return r, nil
}
