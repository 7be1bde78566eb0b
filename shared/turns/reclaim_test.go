package turns_test

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/commonly/runtime/shared/ledger/ledgertest"
	"github.com/commonly/runtime/shared/money"
	"github.com/commonly/runtime/shared/runs"
	"github.com/commonly/runtime/shared/sandbox"
	"github.com/commonly/runtime/shared/turns"
)

// reaperRig is a rig whose dispatches wait in a queue (as Lambda's
// asynchronous invoke would; a worker that dies never finishes them),
// with one install and the reaper's Reclaimer on the same store and clock.
func reaperRig(t *testing.T, o rigOpts) (*rig, *turns.Reclaimer) {
	t.Helper()
	o.dispatcher = func(*turns.Worker) turns.Dispatcher { return &queue{} }
	r := newRig(t, o)
	r.install(t, "inst-1", "user-1", turns.InstallRequest{})
	rc, err := turns.NewReclaimer(turns.ReclaimerConfig{Store: r.st, Now: r.clock.Now, Log: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	return r, rc
}

// admitted submits a turn, left queued, and returns its run.
func (r *rig) admitted(t *testing.T) *runs.Run {
	t.Helper()
	sub, err := r.submit(user, "inst-1", "hi", "")
	if err != nil {
		t.Fatal(err)
	}
	if sub.Run.Status != runs.StatusQueued {
		t.Fatalf("submitted %s", sub.Run.Status)
	}
	return sub.Run
}

// abandoned submits a turn whose worker claims it, records steps (each
// checkpointed, as the engines do after every model call) and a sandbox
// cost, and then dies: nothing closes the run.
func (r *rig) abandoned(t *testing.T, steps []runs.Step, sandboxMicros money.Micros) *runs.Run {
	t.Helper()
	ctx := context.Background()
	run, err := r.st.ClaimRun(ctx, r.admitted(t).RunID, r.clock.Now())
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range steps {
		s.Index = len(run.Steps)
		run.Steps = append(run.Steps, s)
		run.Tokens.Add(s.PromptTokens, s.CachedPromptTokens, s.CompletionTokens)
		run.AddCost(runs.Cost{ModelMicros: s.CostMicros})
		if err := r.st.CheckpointRun(ctx, run, nil); err != nil {
			t.Fatal(err)
		}
	}
	if sandboxMicros > 0 {
		run.AddCost(runs.Cost{SandboxMicros: sandboxMicros})
		if err := r.st.CheckpointRun(ctx, run, nil); err != nil {
			t.Fatal(err)
		}
	}
	return run
}

// sandboxOf records a sandbox of run, as the run-code tool does before
// its first run.
func (r *rig) sandboxOf(t *testing.T, run *runs.Run, provider, id string) {
	t.Helper()
	rec := sandbox.NewRecord(provider, id, sandbox.Meta{RunID: run.RunID, UserID: run.UserID, InstallID: run.InstallID}, r.clock.Now())
	if err := r.st.SandboxCreated(context.Background(), rec); err != nil {
		t.Fatal(err)
	}
}

// setAttempts sets the stored run's attempt, as takeovers before would
// have.
func (r *rig) setAttempts(t *testing.T, runID string, n int) {
	t.Helper()
	_, err := r.db.Client().UpdateItem(context.Background(), &dynamodb.UpdateItemInput{
		TableName: aws.String(tables.Runs), Key: map[string]ddbtypes.AttributeValue{"runId": &ddbtypes.AttributeValueMemberS{Value: runID}},
		UpdateExpression:          aws.String("SET attempt = :n"),
		ExpressionAttributeValues: map[string]ddbtypes.AttributeValue{":n": &ddbtypes.AttributeValueMemberN{Value: strconv.Itoa(n)}},
	})
	if err != nil {
		t.Fatal(err)
	}
}

var (
	answered = runs.Step{Model: "deepseek-v4-flash", PromptTokens: 1800, CompletionTokens: 240, FinishReason: "tool_calls", ElapsedMs: 1400, CostMicros: 1200}
	// unanswered is a call whose answer never arrived: estimated, paid
	// for, and not model output.
	unanswered = runs.Step{Model: "deepseek-v4-flash", PromptTokens: 1800, CompletionTokens: 2048, ElapsedMs: 60000, CostMicros: 500, Estimated: true}
)

// abandonedAll lists the abandoned runs of every shard of the open
// index, at most limit from each, oldest first, as the reaper reads them.
func abandonedAll(ctx context.Context, rc *turns.Reclaimer, limit int) ([]turns.OpenRun, error) {
	var all []turns.OpenRun
	for shard := range rc.Shards() {
		open, err := rc.Abandoned(ctx, shard, limit)
		all = append(all, open...)
		if err != nil {
			return all, err
		}
	}
	slices.SortStableFunc(all, func(a, b turns.OpenRun) int { return a.Since.Compare(b.Since) })
	return all, nil
}

func ids(open []turns.OpenRun) []string {
	var out []string
	for _, o := range open {
		out = append(out, o.RunID)
	}
	return out
}

// Runs whose worker is gone, found on the open index and closed
// interrupted: one mid-turn with model output (paid for and counted, its
// sandbox returned for the reaper to kill), one whose only call never
// answered (refunded, its estimated cost kept), one never claimed
// (refunded). A young run is neither listed nor closed.
func TestReclaimerInterruptsAbandonedRuns(t *testing.T) {
	r, rc := reaperRig(t, rigOpts{})
	ctx := context.Background()
	t0 := r.clock.Now()

	midTurn := r.abandoned(t, []runs.Step{answered}, 300)
	r.sandboxOf(t, midTurn, "e2b", "sbx-live")
	r.sandboxOf(t, midTurn, "e2b", "sbx-killed")
	if err := r.st.SandboxKilled(ctx, "sbx-killed", r.clock.Now()); err != nil {
		t.Fatal(err)
	}
	r.clock.Advance(time.Second)
	noOutput := r.abandoned(t, []runs.Step{unanswered}, 0)
	r.clock.Advance(time.Second)
	neverClaimed := r.admitted(t)
	// Everything but the young run was admitted RunMaxLife ago; the
	// young one's worker claimed it within its lease.
	r.clock.Set(neverClaimed.CreatedAt.Add(turns.RunMaxLife - turns.CheckAfter/2))
	young := r.abandoned(t, []runs.Step{answered}, 0)
	r.sandboxOf(t, young, "e2b", "sbx-young")
	r.clock.Set(neverClaimed.CreatedAt.Add(turns.RunMaxLife + time.Millisecond))
	open, err := abandonedAll(ctx, rc, 10)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{midTurn.RunID, noOutput.RunID, neverClaimed.RunID}; !slices.Equal(ids(open), want) {
		t.Fatalf("abandoned = %v, want %v (oldest first)", ids(open), want)
	}
	if !open[0].Since.Equal(t0) {
		t.Errorf("since %s, want the admission %s", open[0].Since, t0)
	}
	if u := r.usage(t, user); u.TurnsUsed != 4 {
		t.Fatalf("turns used %d before the reaper", u.TurnsUsed)
	}

	cases := []struct {
		run  *runs.Run
		want turns.Interruption
		msg  string
	}{
		{midTurn, turns.Interruption{Closed: true, Refunded: false, CostMicros: 1500, Sandboxes: []turns.SandboxRef{{Provider: "e2b", SandboxID: "sbx-live", CreatedAt: t0}}},
			"the turn's worker stopped before the turn ended"},
		{noOutput, turns.Interruption{Closed: true, Refunded: true, CostMicros: 500}, "the turn's worker stopped before the turn ended"},
		{neverClaimed, turns.Interruption{Closed: true, Refunded: true}, "the turn was not started in time"},
	}
	for _, c := range cases {
		got, err := rc.Interrupt(ctx, c.run.RunID)
		if err != nil {
			t.Fatal(err)
		}
		if got.Closed != c.want.Closed || got.Refunded != c.want.Refunded || got.CostMicros != c.want.CostMicros || !slices.Equal(got.Sandboxes, c.want.Sandboxes) {
			t.Errorf("%s: %+v, want %+v", c.run.RunID, got, c.want)
		}
		stored, err := r.st.GetRun(ctx, c.run.RunID)
		if err != nil {
			t.Fatal(err)
		}
		if stored.Status != runs.StatusInterrupted || stored.ErrorKind != runs.ErrInterrupted || stored.ErrorMessage != c.msg ||
			stored.Refunded != c.want.Refunded || stored.CostMicros != c.want.CostMicros || stored.CostMicros != stored.Cost.Total() ||
			len(stored.Steps) != len(c.run.Steps) || stored.CompletedAt == nil || !stored.CompletedAt.Equal(r.clock.Now()) {
			t.Errorf("%s stored as %+v", c.run.RunID, stored)
		}
	}
	// Two of the four turns were given back.
	if u := r.usage(t, user); u.TurnsUsed != 2 {
		t.Errorf("turns used %d, want 2", u.TurnsUsed)
	}

	// Closed runs are off the index, and a second closer changes nothing.
	if open, err := abandonedAll(ctx, rc, 10); err != nil || len(open) != 0 {
		t.Errorf("abandoned after the sweep = %v, %v", ids(open), err)
	}
	if got, err := rc.Interrupt(ctx, midTurn.RunID); err != nil || got.Closed {
		t.Errorf("a second interrupt: %+v, %v", got, err)
	}
	// The young run is still its worker's.
	if got, err := rc.Interrupt(ctx, young.RunID); err != nil || got.Closed || got.Sandboxes != nil {
		t.Errorf("interrupting a young run: %+v, %v", got, err)
	}
	if stored, err := r.st.GetRun(ctx, young.RunID); err != nil || stored.Status != runs.StatusRunning {
		t.Errorf("young run = %+v, %v", stored, err)
	}
	if u := r.usage(t, user); u.TurnsUsed != 2 {
		t.Errorf("turns used %d, want 2", u.TurnsUsed)
	}
	// An unknown run is nothing to close.
	if got, err := rc.Interrupt(ctx, "run_unknown"); err != nil || got.Closed {
		t.Errorf("interrupting an unknown run: %+v, %v", got, err)
	}
}

// Issue 13's reproduction, with leases: a worker dies early. Lambda's
// retry a minute later finds its lease lapsed and takes the run over
// (attempt 2), which the engine is told; with no attempts left, the retry
// closes the run itself, refunded, as the reaper would.
func TestWorkerThatDiesEarlyIsResumedByLambdasRetry(t *testing.T) {
	r, rc := reaperRig(t, rigOpts{})
	ctx := context.Background()
	run := r.abandoned(t, nil, 0)
	// While its lease lives, a retried dispatch fails so Lambda tries later.
	r.clock.Advance(turns.LeaseDuration - time.Millisecond)
	if _, err := r.worker.Execute(ctx, run.RunID); !errors.Is(err, turns.ErrLeaseHeld) {
		t.Fatalf("a dispatch within the lease: %v", err)
	}
	if got, err := rc.Interrupt(ctx, run.RunID); err != nil || got.Closed || got.Redispatched {
		t.Fatalf("interrupt within the lease: %+v, %v", got, err)
	}
	var resumed *turns.Resumption
	r.native.run = func(t turns.EngineTurn) turns.EngineResult {
		resumed = t.Resumed
		t.Run.FinalMessage = "answer"
		t.Run.End(runs.StatusSucceeded, "", "", *t.Run.StartedAt)
		return turns.EngineResult{}
	}
	r.clock.Advance(time.Minute)
	retried, err := r.worker.Execute(ctx, run.RunID)
	if err != nil || retried.Status != runs.StatusSucceeded || retried.Attempts != 2 {
		t.Fatalf("Lambda's retry: %+v, %v", retried, err)
	}
	if resumed == nil || resumed.Lost.Attempt != 1 || len(resumed.Entries) != 0 || !resumed.Lost.ResumedAt.Equal(r.clock.Now()) {
		t.Fatalf("the engine was told %+v", resumed)
	}
	if u := r.usage(t, user); u.TurnsUsed != 1 || r.native.count() != 1 {
		t.Errorf("turns used %d, ran %d times", u.TurnsUsed, r.native.count())
	}

	// The same with no attempts left: the retry closes it, refunded.
	last := r.abandoned(t, nil, 0)
	r.setAttempts(t, last.RunID, 3)
	r.clock.Advance(time.Minute)
	closed, err := r.worker.Execute(ctx, last.RunID)
	if err != nil || closed.Status != runs.StatusInterrupted || !closed.Refunded {
		t.Fatalf("a retry past the attempts: %+v, %v", closed, err)
	}
	if r.native.count() != 1 {
		t.Errorf("ran %d times", r.native.count())
	}
}

// gatedReclaim holds the reaper's final write until gate returns, so a
// round can put the late worker's write between the reaper's read and
// its write.
type gatedReclaim struct {
	turns.ReclaimStore
	gate func()
}

func (g gatedReclaim) FinishRun(ctx context.Context, r *runs.Run, refund bool) error {
	g.gate()
	return g.ReclaimStore.FinishRun(ctx, r, refund)
}

// The reaper and a late worker close the same run: Lambda's retry of a
// dispatch whose final write failed writes the outcome its container
// kept, while the reaper interrupts the run. Rounds run them at once, or
// put the worker's write between the reaper's read and its write (the
// reaper must lose), or the reaper's write first (the worker must lose).
// Exactly one wins, the stored run is the winner's, and the turn is given
// back at most once (in every other round both want to refund it).
func TestReaperAndLateWorkerRace(t *testing.T) {
	st := &failingFinish{}
	r, _ := reaperRig(t, rigOpts{storeWrap: func(s turns.Store) turns.Store { st.Store = s; return st }})
	ctx := context.Background()
	const (
		together = iota
		workerBetween
		reaperFirst
		modes
	)
	const rounds = 16 * modes
	wins := map[string]int{}
	used := int64(0)
	for i := range rounds {
		mode, refunding := i%modes, (i/modes)%2 == 1
		r.native.run = nil // answers: succeeded, paid for
		if refunding {
			r.native.run = func(t turns.EngineTurn) turns.EngineResult {
				t.Run.End(runs.StatusFailed, runs.ErrSandbox, "sandbox lost", *t.Run.StartedAt)
				return turns.EngineResult{Infrastructure: true}
			}
		}
		id := r.admitted(t).RunID
		st.mu.Lock()
		st.fail = 1
		st.mu.Unlock()
		if _, err := r.worker.Execute(ctx, id); !errors.Is(err, turns.ErrFinalWrite) {
			t.Fatalf("round %d: the first final write: %v", i, err)
		}
		open, err := r.st.GetRun(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		r.clock.Set(turns.OpenUntil(open).Add(time.Millisecond))

		var (
			wg                   sync.WaitGroup
			start                = make(chan struct{})
			workerDone, reapDone = make(chan struct{}), make(chan struct{})
			late                 *runs.Run
			lateErr              error
			reaped               turns.Interruption
			reapErr              error
		)
		gate := func() {}
		if mode == workerBetween {
			gate = func() { <-workerDone }
		}
		rc, err := turns.NewReclaimer(turns.ReclaimerConfig{Store: gatedReclaim{r.st, gate}, Now: r.clock.Now, Log: slog.New(slog.DiscardHandler)})
		if err != nil {
			t.Fatal(err)
		}
		wg.Add(2)
		go func() {
			defer wg.Done()
			defer close(workerDone)
			<-start
			if mode == reaperFirst {
				<-reapDone
			}
			late, lateErr = r.worker.Execute(ctx, id)
		}()
		go func() {
			defer wg.Done()
			defer close(reapDone)
			<-start
			reaped, reapErr = rc.Interrupt(ctx, id)
		}()
		close(start)
		wg.Wait()
		if lateErr != nil || reapErr != nil {
			t.Fatalf("round %d: worker %v, reaper %v", i, lateErr, reapErr)
		}
		stored, err := r.st.GetRun(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		winner := "worker"
		if reaped.Closed {
			winner = "reaper"
		}
		wins[winner]++
		switch {
		case mode == workerBetween && winner != "worker", mode == reaperFirst && winner != "reaper":
			t.Fatalf("round %d (mode %d): %s won", i, mode, winner)
		case winner == "reaper" && stored.Status != runs.StatusInterrupted,
			winner == "worker" && stored.Status == runs.StatusInterrupted,
			late.Status != stored.Status || late.Refunded != stored.Refunded:
			t.Fatalf("round %d: %s won, stored %s refunded %v, the worker returned %s", i, winner, stored.Status, stored.Refunded, late.Status)
		case winner == "reaper" && (!reaped.Refunded || !stored.Refunded):
			// Nothing answered before the first final write's failure
			// was checkpointed: the reaper refunds.
			t.Fatalf("round %d: the reaper's refund %v, stored %v", i, reaped.Refunded, stored.Refunded)
		}
		if !stored.Refunded {
			used++
		}
		if u := r.usage(t, user); u.TurnsUsed != used {
			t.Fatalf("round %d: %s won (refunded %v): turns used %d, want %d", i, winner, stored.Refunded, u.TurnsUsed, used)
		}
	}
	t.Logf("wins over %d rounds: %v", rounds, wins)
}

// The cost of an interrupted run reaches the user's day through the alarm
// function's ledger, fed by the runs table's stream as in AWS: counted
// once, refunded turn or not.
func TestInterruptedCostReachesTheDayThroughTheLedger(t *testing.T) {
	r, rc := reaperRig(t, rigOpts{})
	ctx := context.Background()
	// seen is told of each interrupted run once the batch holding its
	// final record has been counted.
	seen := ledgertest.Feed(t, r.db, tables.Runs, r.st, r.clock.Now, runs.StatusInterrupted)

	paid := r.abandoned(t, []runs.Step{answered, answered}, 300)
	refunded := r.abandoned(t, []runs.Step{unanswered}, 0)
	r.clock.Set(refunded.CreatedAt.Add(turns.RunMaxLife + time.Millisecond))
	open, err := abandonedAll(ctx, rc, 10)
	if err != nil || len(open) != 2 {
		t.Fatalf("abandoned = %v, %v", ids(open), err)
	}
	var total money.Micros
	for _, o := range open {
		got, err := rc.Interrupt(ctx, o.RunID)
		if err != nil || !got.Closed {
			t.Fatalf("interrupt %s: %+v, %v", o.RunID, got, err)
		}
		total += got.CostMicros
	}
	if total != 2*1200+300+500 {
		t.Fatalf("interrupted costs %d", total)
	}
	ledgertest.Wait(t, seen, paid.RunID, refunded.RunID)
	u := r.usage(t, user)
	if u.CostMicros != int64(total) || u.TurnsUsed != 1 {
		t.Errorf("the day: cost %d, turns %d; want %d (counted once) and 1 (one refunded)", u.CostMicros, u.TurnsUsed, total)
	}
}

func TestReclaimerChecksItsInput(t *testing.T) {
	if _, err := turns.NewReclaimer(turns.ReclaimerConfig{}); err == nil || !strings.Contains(err.Error(), "store") {
		t.Errorf("a reclaimer without a store: %v", err)
	}
	_, rc := reaperRig(t, rigOpts{})
	if _, err := rc.Abandoned(context.Background(), 0, 0); err == nil {
		t.Error("a limit of 0 was accepted")
	}
	for _, shard := range []int{-1, rc.Shards()} {
		if _, err := rc.Abandoned(context.Background(), shard, 10); err == nil {
			t.Errorf("shard %d of %d was accepted", shard, rc.Shards())
		}
	}
}
