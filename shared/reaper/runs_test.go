package reaper_test

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/commonly/runtime/shared/ledger/ledgertest"
	"github.com/commonly/runtime/shared/money"
	"github.com/commonly/runtime/shared/reaper"
	"github.com/commonly/runtime/shared/runs"
	"github.com/commonly/runtime/shared/sandbox"
	"github.com/commonly/runtime/shared/sandbox/e2b"
	"github.com/commonly/runtime/shared/sandbox/e2b/e2btest"
	"github.com/commonly/runtime/shared/turns"
	"github.com/commonly/runtime/shared/utcday"
)

// fakeRuns scripts the run half's failures: what Abandoned lists and
// what each Interrupt answers.
type fakeRuns struct {
	open    []turns.OpenRun
	openErr error
	answers map[string]turns.Interruption
	errs    map[string]error

	mu          sync.Mutex
	interrupted []string
}

func (f *fakeRuns) Abandoned(context.Context, int, int) ([]turns.OpenRun, error) {
	return f.open, f.openErr
}

// Shards: one, so what it scripts is listed once.
func (f *fakeRuns) Shards() int { return 1 }

func (f *fakeRuns) Interrupt(_ context.Context, runID string) (turns.Interruption, error) {
	f.mu.Lock()
	f.interrupted = append(f.interrupted, runID)
	f.mu.Unlock()
	return f.answers[runID], f.errs[runID]
}

// The run half: a run closed has its sandboxes killed whatever their
// age (its turn is over), once even when the sandbox half finds them too;
// a run closed by someone else first is an outcome; a failure is counted
// and the others go on; runs listed before a failing page are closed.
func TestRunsClosedAndTheirSandboxesKilled(t *testing.T) {
	r := newRig(t)
	youngOfRun := r.ours(t0.Add(-10*time.Second), time.Time{})
	r.record(t, youngOfRun, "run-1", t0.Add(-10*time.Second))
	oldOfRun := r.ours(expiredAt.Add(-time.Hour), t0.Add(time.Hour)) // expired too: listed and the run's
	unrelatedYoung := r.ours(t0.Add(-20*time.Second), time.Time{})
	fr := &fakeRuns{
		open: []turns.OpenRun{{RunID: "run-1"}, {RunID: "run-2"}, {RunID: "run-3"}},
		// The index's page after these could not be read.
		openErr: errors.New("query open runs (3 listed): throttled"),
		answers: map[string]turns.Interruption{
			"run-1": {Closed: true, Refunded: false, CostMicros: 4200, Sandboxes: []turns.SandboxRef{
				{Provider: e2b.ProviderName, SandboxID: youngOfRun}, {Provider: e2b.ProviderName, SandboxID: oldOfRun},
			}},
			"run-2": {Closed: false},
			"run-3": {Closed: true, Refunded: true, CostMicros: 0, Sandboxes: []turns.SandboxRef{{Provider: "other-cloud", SandboxID: "x1"}}},
		},
		errs: map[string]error{},
	}
	fr.answers["run-4"] = turns.Interruption{}
	fr.open = append(fr.open, turns.OpenRun{RunID: "run-4"})
	fr.errs["run-4"] = errors.New("interrupt run run-4: ThrottlingException")

	rep, err := r.reaper(t, reaper.Config{Runs: fr}).Sweep(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if rep.RunsAbandoned != 4 || rep.RunsInterrupted != 2 || rep.RunsRefunded != 1 || rep.RunsAlreadyClosed != 1 ||
		rep.RunFailures != 1 || rep.InterruptedCostMicros != 4200 || rep.SourceFailures != 1 {
		t.Fatalf("report %+v", rep)
	}
	if r.alive(youngOfRun) || r.alive(oldOfRun) || !r.alive(unrelatedYoung) {
		t.Fatalf("alive: run's young %v, run's old %v, unrelated young %v", r.alive(youngOfRun), r.alive(oldOfRun), r.alive(unrelatedYoung))
	}
	if n := r.e2b.Calls()[e2btest.CallKill]; n != 2 {
		t.Errorf("%d kills for two sandboxes (one found by both halves)", n)
	}
	if r.status(t, youngOfRun) != sandbox.StatusKilled {
		t.Error("the run's sandbox record is not marked")
	}
	// A provider this reaper cannot reach is a kill failure, said.
	if rep.KillFailures != 1 || !strings.Contains(r.logs.String(), "no provider to kill it here") {
		t.Errorf("kill failures %d; log:\n%s", rep.KillFailures, r.logs.String())
	}
	if m := r.metrics(t); m["RunsInterrupted"] != 2 || m["RunsRefunded"] != 1 || m["RunInterruptFailures"] != 1 {
		t.Errorf("metrics %v", m)
	}
}

// Issue 13's end to end, on the production parts: two turns whose worker
// died mid-turn, each with a code sandbox created through the E2B client
// and recorded as the run-code tool does; one had model output (paid for
// and counted), the other's only call never answered (refunded). One
// sweep past turns.RunMaxLife closes both interrupted through the
// Reclaimer, kills the sandbox still running (its timeout extended by
// mistake) and finds the other gone with E2B's own timeout; the alarm
// function's ledger, fed by the runs stream, counts both costs on the
// user's day, once, and the day keeps one turn.
func TestAbandonedRunIsClosedRefundedAndItsSandboxKilled(t *testing.T) {
	r := newRig(t)
	ctx := context.Background()
	rc, err := turns.NewReclaimer(turns.ReclaimerConfig{Store: r.st, Now: r.clock.Now, Log: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	counted := ledgertest.Feed(t, r.db, tables.Runs, r.st, r.clock.Now, runs.StatusInterrupted)

	// A turn admitted, claimed, checkpointed after its model calls, with
	// a sandbox; then its worker is gone.
	abandon := func(id string, step runs.Step) (*runs.Run, string) {
		t.Helper()
		now := r.clock.Now()
		run := &runs.Run{RunID: id, InstallID: "inst", UserID: "grace", Status: runs.StatusQueued, Day: utcday.Of(now),
			CreatedAt: now, Message: "compute", RequestHash: "h-" + id, Engine: "native", Steps: []runs.Step{}}
		if res, err := r.st.Admit(ctx, turns.Admission{Plan: turns.PlanFree, Run: run, Limit: 30, Now: now}); err != nil || !res.Admitted {
			t.Fatalf("admit %s: %+v, %v", id, res, err)
		}
		run, err := r.st.ClaimRun(ctx, id, now)
		if err != nil {
			t.Fatal(err)
		}
		sb, err := r.api.CreateSandbox(ctx, e2b.Metadata(e2btest.DefaultStage, id, "grace", "inst", now.Add(sandbox.Lifetime)))
		if err != nil {
			t.Fatal(err)
		}
		r.record(t, sb.SandboxID, id, now)
		run.Steps = append(run.Steps, step)
		run.AddCost(runs.Cost{ModelMicros: step.CostMicros, SandboxMicros: 300})
		if err := r.st.CheckpointRun(ctx, run, nil); err != nil {
			t.Fatal(err)
		}
		return run, sb.SandboxID
	}
	paid, paidSandbox := abandon("run-paid", runs.Step{Model: "deepseek-v4-flash", PromptTokens: 1800, CompletionTokens: 240, CostMicros: 1200})
	refunded, refundedSandbox := abandon("run-refunded", runs.Step{Model: "deepseek-v4-flash", PromptTokens: 1800, CompletionTokens: 2048, CostMicros: 500, Estimated: true})
	// A timeout extended by mistake keeps one alive at E2B.
	if !r.e2b.Extend(paidSandbox, time.Hour) {
		t.Fatal("the sandbox is gone already")
	}

	r.clock.Advance(turns.RunMaxLife + time.Second)
	rep, err := r.reaper(t, reaper.Config{Runs: rc}).Sweep(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if rep.RunsAbandoned != 2 || rep.RunsInterrupted != 2 || rep.RunsRefunded != 1 || rep.InterruptedCostMicros != 1500+800 {
		t.Fatalf("report %+v", rep)
	}
	// Each sandbox once, found by both halves: killed, or gone with E2B's
	// own timeout (404).
	if rep.Killed != 1 || rep.AlreadyGone != 1 || r.alive(paidSandbox) || r.e2b.Calls()[e2btest.CallKill] != 2 {
		t.Fatalf("kills: %+v, paid sandbox alive %v, calls %v", rep, r.alive(paidSandbox), r.e2b.Calls())
	}
	for _, id := range []string{paidSandbox, refundedSandbox} {
		if r.status(t, id) != sandbox.StatusKilled {
			t.Errorf("record of %s is %q", id, r.status(t, id))
		}
	}
	for _, want := range []struct {
		run      *runs.Run
		refunded bool
		cost     money.Micros
	}{{paid, false, 1500}, {refunded, true, 800}} {
		got, err := r.st.GetRun(ctx, want.run.RunID)
		if err != nil {
			t.Fatal(err)
		}
		if got.Status != runs.StatusInterrupted || got.ErrorKind != runs.ErrInterrupted || got.Refunded != want.refunded || got.CostMicros != want.cost {
			t.Errorf("%s: %s/%s refunded %v cost %d; want interrupted, refunded %v, cost %d",
				got.RunID, got.Status, got.ErrorKind, got.Refunded, got.CostMicros, want.refunded, want.cost)
		}
	}

	ledgertest.Wait(t, counted, paid.RunID, refunded.RunID)
	u, err := r.st.Usage(ctx, "grace", paid.Day)
	if err != nil {
		t.Fatal(err)
	}
	if u.CostMicros != 2300 || u.Turns != 1 {
		t.Errorf("the day: cost %d, turns %d; want 2300 (both runs, once) and 1 (one refunded)", u.CostMicros, u.Turns)
	}

	// A late sweep finds nothing more: the runs are final.
	rep, err = r.reaper(t, reaper.Config{Runs: rc}).Sweep(ctx)
	if err != nil || rep.RunsAbandoned != 0 || rep.Killed+rep.AlreadyGone != 0 {
		t.Fatalf("late sweep: %+v, %v", rep, err)
	}
}
