package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	reaperapp "github.com/commonly/runtime/functions/reaper/app"
	"github.com/commonly/runtime/shared/httpwire"
	"github.com/commonly/runtime/shared/reaper"
	"github.com/commonly/runtime/shared/sandbox/local"
	"github.com/commonly/runtime/shared/turns"
)

// DefaultReaperInterval is REAPER_INTERVAL when unset: the stack's
// schedule, rate(1 minute).
const DefaultReaperInterval = time.Minute

// localReaper is the reaper function in the local stack: its wiring
// (functions/reaper/app) with the stack's DynamoDB client and the turn's
// own local sandbox provider (a provider's sessions live in its process),
// swept on a ticker every REAPER_INTERVAL, as the schedule invokes it in
// AWS.
type localReaper struct {
	cfg      reaperapp.Config
	built    *reaperapp.Built
	interval time.Duration
	out      io.Writer
	// onSweep, if set, is called after each sweep (tests wait on it).
	onSweep func(reaper.Report, error)

	stop context.CancelFunc
	done sync.WaitGroup
}

// newLocalReaper wires the reaper from the stack's environment. box is
// the turn's local provider (nil with E2B).
func newLocalReaper(env map[string]string, ddb *dynamodb.Client, box *local.Provider, log *slog.Logger, now func() time.Time, out io.Writer) (*localReaper, error) {
	cfg, err := reaperapp.LoadConfig(func(k string) string { return env[k] })
	if err != nil {
		return nil, fmt.Errorf("reaper config: %w", err)
	}
	interval, err := parseInterval(env["REAPER_INTERVAL"])
	if err != nil {
		return nil, err
	}
	deps := reaperapp.Deps{Dynamo: ddb, Now: now, Log: log}
	if box != nil {
		deps.Local = box
	}
	built, err := reaperapp.Build(cfg, deps)
	if err != nil {
		return nil, err
	}
	return &localReaper{cfg: cfg, built: built, interval: interval, out: out}, nil
}

// parseInterval reads REAPER_INTERVAL: a duration or seconds, positive,
// at most a day.
func parseInterval(v string) (time.Duration, error) {
	return httpwire.ParseTimeout("REAPER_INTERVAL", v, DefaultReaperInterval, 24*time.Hour)
}

// start sweeps every interval until close (or ctx ends).
func (r *localReaper) start(ctx context.Context) {
	ctx, r.stop = context.WithCancel(ctx)
	r.done.Go(func() {
		tick := time.NewTicker(r.interval)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
				r.sweep(ctx)
			}
		}
	})
}

// sweep runs one sweep, as one scheduled invocation, and says so on the
// output when it did something or failed.
func (r *localReaper) sweep(ctx context.Context) {
	rep, err := r.built.Reaper.Sweep(ctx)
	switch {
	case err != nil:
		fmt.Fprintf(r.out, "  reaper <- sweep failed: %v\n", err)
	case rep.Killed+rep.AlreadyGone+rep.KillFailures+rep.RunsInterrupted+rep.RunFailures+rep.SourceFailures > 0:
		fmt.Fprintf(r.out, "  reaper <- %d sandbox(es) killed, %d already gone, %d not killed; %d run(s) closed interrupted (%d refunded), %d not closed; %d source(s) failed\n",
			rep.Killed, rep.AlreadyGone, rep.KillFailures, rep.RunsInterrupted, rep.RunsRefunded, rep.RunFailures, rep.SourceFailures)
	}
	if r.onSweep != nil {
		r.onSweep(rep, err)
	}
}

// label is the start banner's line.
func (r *localReaper) label() string {
	from := "the local bubblewrap sandbox's sessions, the state table's live index"
	if r.cfg.Sandbox == reaperapp.SandboxE2B {
		from = fmt.Sprintf("E2B's list of stage %q (STAGE), the state table's live index", r.cfg.Stage)
	}
	return fmt.Sprintf("every %s (REAPER_INTERVAL): kills sandboxes (%s) past %s (SANDBOX_LIFETIME) + %s, closes runs still open %s after admission as interrupted",
		r.interval, from, r.cfg.Lifetime, reaper.DefaultGrace, turns.RunMaxLife)
}

func (r *localReaper) close() {
	if r.stop != nil {
		r.stop()
	}
	r.done.Wait()
}
