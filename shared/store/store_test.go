package store_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/commonly/runtime/internal/dynamodblocal"
	"github.com/commonly/runtime/shared/money"
	"github.com/commonly/runtime/shared/runs"
	"github.com/commonly/runtime/shared/store"
	"github.com/commonly/runtime/shared/turns"
	"github.com/commonly/runtime/shared/utcday"
)

var tables = store.Tables{State: "state", Runs: "runs"}

func newStore(t *testing.T) *store.Dynamo {
	t.Helper()
	srv, err := dynamodblocal.StartWithTables(context.Background(), "127.0.0.1:0", tables)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	s, err := store.New(store.Config{DB: srv.Client(), Tables: tables})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestNewChecksItsConfig(t *testing.T) {
	_, err := store.New(store.Config{Tables: store.Tables{Runs: "r"}, IdempotencyTTL: -time.Hour})
	for _, want := range []string{"client", "state table", "negative"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("err = %v, want it to name the %s", err, want)
		}
	}
	// The alarm function has no runs table: it only reads their stream.
	if _, err := store.New(store.Config{DB: &dynamodb.Client{}, Tables: store.Tables{State: "s"}}); err != nil {
		t.Errorf("a store of the state table alone: %v", err)
	}
}

var now = time.Date(2026, 12, 2, 23, 59, 59, 0, time.UTC)

func newRun(id, user string, at time.Time) *runs.Run {
	return &runs.Run{RunID: id, InstallID: "i1", UserID: user, Status: runs.StatusQueued, Day: utcday.Of(at), CreatedAt: at, Message: "hi", RequestHash: "h-" + id, Steps: []runs.Step{}}
}

func TestAdmitExactlyLimitUnderConcurrency(t *testing.T) {
	s := newStore(t)
	ctx := context.Background()
	var admitted, refused atomic.Int64
	var wg sync.WaitGroup
	for i := range 100 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := s.Admit(ctx, turns.Admission{Plan: turns.PlanFree, Run: newRun(fmt.Sprintf("r%d", i), "u1", now), Limit: 30, Now: now})
			if err != nil {
				t.Error(err)
				return
			}
			if res.Admitted {
				admitted.Add(1)
			} else {
				refused.Add(1)
			}
		}()
	}
	wg.Wait()
	if admitted.Load() != 30 || refused.Load() != 70 {
		t.Fatalf("admitted %d refused %d, want 30/70", admitted.Load(), refused.Load())
	}
	u, err := s.Usage(ctx, "u1", utcday.Of(now))
	if err != nil || u.Turns != 30 {
		t.Fatalf("usage = %+v, %v", u, err)
	}
}

func TestCeilingResetsAtUTCMidnight(t *testing.T) {
	s := newStore(t)
	ctx := context.Background()
	for i := range 2 {
		res, _ := s.Admit(ctx, turns.Admission{Plan: turns.PlanFree, Run: newRun(fmt.Sprintf("a%d", i), "u1", now), Limit: 2, Now: now})
		if !res.Admitted {
			t.Fatalf("turn %d refused", i)
		}
	}
	res, _ := s.Admit(ctx, turns.Admission{Plan: turns.PlanFree, Run: newRun("a3", "u1", now), Limit: 2, Now: now})
	if res.Admitted || res.CeilingUsed != 2 {
		t.Fatalf("third turn: %+v", res)
	}
	next := now.Add(time.Second) // 00:00:00 the next day
	res, _ = s.Admit(ctx, turns.Admission{Plan: turns.PlanFree, Run: newRun("b1", "u1", next), Limit: 2, Now: next})
	if !res.Admitted {
		t.Fatal("first turn of the new UTC day refused")
	}
}

func TestIdempotentAdmission(t *testing.T) {
	s := newStore(t)
	ctx := context.Background()
	first := newRun("r1", "u1", now)
	res, err := s.Admit(ctx, turns.Admission{Plan: turns.PlanFree, Run: first, Limit: 1, IdempotencyKey: "k", CallerID: "u1", Now: now})
	if err != nil || !res.Admitted {
		t.Fatalf("first: %+v %v", res, err)
	}
	// Same key at the ceiling is still recognised as a replay, not a 429.
	res, err = s.Admit(ctx, turns.Admission{Plan: turns.PlanFree, Run: newRun("r2", "u1", now), Limit: 1, IdempotencyKey: "k", CallerID: "u1", Now: now})
	if err != nil || res.ReplayOf != "r1" || res.ReplayHash != "h-r1" {
		t.Fatalf("replay: %+v %v", res, err)
	}
	// Another caller's identical key is independent.
	res, _ = s.Admit(ctx, turns.Admission{Plan: turns.PlanFree, Run: newRun("r3", "u2", now), Limit: 1, IdempotencyKey: "k", CallerID: "u2", Now: now})
	if !res.Admitted {
		t.Fatalf("other caller: %+v", res)
	}
	// An expired key is forgotten.
	later := now.Add(25 * time.Hour)
	res, _ = s.Admit(ctx, turns.Admission{Plan: turns.PlanFree, Run: newRun("r4", "u1", later), Limit: 1, IdempotencyKey: "k", CallerID: "u1", Now: later})
	if !res.Admitted {
		t.Fatalf("expired key: %+v", res)
	}
}

func TestClaimFinishAndRefund(t *testing.T) {
	s := newStore(t)
	ctx := context.Background()
	r := newRun("r1", "u1", now)
	if res, _ := s.Admit(ctx, turns.Admission{Plan: turns.PlanFree, Run: r, Limit: 5, Now: now}); !res.Admitted {
		t.Fatal("not admitted")
	}
	claimed, err := s.ClaimRun(ctx, "r1", now)
	if err != nil || claimed.Status != runs.StatusRunning || claimed.StartedAt == nil {
		t.Fatalf("claim: %+v %v", claimed, err)
	}
	again, err := s.ClaimRun(ctx, "r1", now)
	if !errors.Is(err, turns.ErrNotClaimable) || again.Status != runs.StatusRunning {
		t.Fatalf("second claim: %+v %v", again, err)
	}
	if _, err := s.ClaimRun(ctx, "missing", now); !errors.Is(err, turns.ErrNotFound) {
		t.Fatalf("claim of a missing run: %v", err)
	}
	claimed.Steps = []runs.Step{{Index: 0, Model: "m", PromptTokens: 10}}
	if err := s.CheckpointRun(ctx, claimed, nil); err != nil {
		t.Fatal(err)
	}
	claimed.Status, claimed.CostMicros = runs.StatusFailed, money.Micros(1234)
	claimed.Cost.ModelMicros = 1234
	if err := s.FinishRun(ctx, claimed, true); err != nil {
		t.Fatal(err)
	}
	// A second final write (a retried worker) refunds nothing more.
	if err := s.FinishRun(ctx, claimed, true); !errors.Is(err, turns.ErrAlreadyFinal) {
		t.Fatalf("second finish: %v", err)
	}
	if err := s.CheckpointRun(ctx, claimed, nil); !errors.Is(err, turns.ErrAlreadyFinal) {
		t.Fatalf("checkpoint after final: %v", err)
	}
	// The run's cost is not charged to the day here: the alarm function's
	// ledger counts it from the runs stream.
	u, _ := s.Usage(ctx, "u1", utcday.Of(now))
	if u.Turns != 0 || u.CostMicros != 0 {
		t.Fatalf("usage after refund = %+v, want 0 turns and no cost", u)
	}
	// Without a refund the final write is the run alone.
	r2 := newRun("r2", "u1", now)
	if res, _ := s.Admit(ctx, turns.Admission{Plan: turns.PlanFree, Run: r2, Limit: 5, Now: now}); !res.Admitted {
		t.Fatal("r2 not admitted")
	}
	r2.End(runs.StatusSucceeded, "", "", now)
	r2.CostMicros = 99
	if err := s.FinishRun(ctx, r2, false); err != nil {
		t.Fatal(err)
	}
	if err := s.FinishRun(ctx, r2, false); !errors.Is(err, turns.ErrAlreadyFinal) {
		t.Fatalf("second finish without refund: %v", err)
	}
	if u, _ := s.Usage(ctx, "u1", utcday.Of(now)); u.Turns != 1 || u.CostMicros != 0 {
		t.Fatalf("usage after r2 = %+v", u)
	}
	got, err := s.GetRun(ctx, "r1")
	if err != nil || got.Status != runs.StatusFailed || len(got.Steps) != 1 || got.CostMicros != 1234 {
		t.Fatalf("run = %+v, %v", got, err)
	}
}

func TestInstallsAndPlans(t *testing.T) {
	s := newStore(t)
	ctx := context.Background()
	if _, _, err := s.GetInstallAndPlan(ctx, "nope", "u1"); !errors.Is(err, turns.ErrNotFound) {
		t.Fatalf("missing install: %v", err)
	}
	empty := []string{}
	in := &turns.Install{InstallID: "i1", UserID: "u1", PodID: "p", AgentName: "a", InstanceID: "i1", Engine: turns.Native, Tools: &empty, CreatedAt: now}
	if err := s.PutInstall(ctx, in); err != nil {
		t.Fatal(err)
	}
	got, plan, err := s.GetInstallAndPlan(ctx, "i1", "u1")
	if err != nil || plan != turns.PlanFree || got.UserID != "u1" {
		t.Fatalf("got %+v %s %v", got, plan, err)
	}
	if got.Tools == nil || len(*got.Tools) != 0 {
		t.Fatalf("an empty tools list must stay empty (no tools), got %v", got.Tools)
	}
	if err := s.SetPlan(ctx, "u1", turns.PlanPro, now); err != nil {
		t.Fatal(err)
	}
	if p, _ := s.GetPlan(ctx, "u1"); p != turns.PlanPro {
		t.Fatalf("plan = %s", p)
	}
	m := turns.Migration{From: turns.Native, To: turns.DurableObject, State: turns.MigrationInProgress, UpdatedAt: now}
	upd, err := s.SetMigration(ctx, "i1", m)
	if err != nil || upd.Migration == nil || upd.Migration.To != turns.DurableObject {
		t.Fatalf("migration: %+v %v", upd, err)
	}
	if _, err := s.SetMigration(ctx, "nope", m); !errors.Is(err, turns.ErrNotFound) {
		t.Fatalf("migration of a missing install: %v", err)
	}
}

// TestAdmitChecksThePlan: a turn is counted only under the plan its limit
// came from; otherwise nothing is written and the caller is told.
func TestAdmitChecksThePlan(t *testing.T) {
	s := newStore(t)
	ctx := context.Background()
	n := 0
	admit := func(user string, p turns.Plan) turns.AdmitResult {
		t.Helper()
		n++
		res, err := s.Admit(ctx, turns.Admission{Plan: p, Run: newRun(fmt.Sprintf("p%d", n), user, now), Limit: 5, Now: now})
		if err != nil {
			t.Fatalf("admit %s as %s: %v", user, p, err)
		}
		return res
	}
	// No plan item: the user is free.
	if res := admit("u1", turns.PlanFree); !res.Admitted {
		t.Fatalf("free user without a plan item: %+v", res)
	}
	if res := admit("u1", turns.PlanPro); !res.PlanChanged || res.Admitted {
		t.Fatalf("pro assumed, no plan item: %+v", res)
	}
	if err := s.SetPlan(ctx, "u1", turns.PlanPro, now); err != nil {
		t.Fatal(err)
	}
	if res := admit("u1", turns.PlanFree); !res.PlanChanged {
		t.Fatalf("free assumed, pro stored: %+v", res)
	}
	if res := admit("u1", turns.PlanPro); !res.Admitted {
		t.Fatalf("pro assumed, pro stored: %+v", res)
	}
	if err := s.SetPlan(ctx, "u1", turns.PlanFree, now); err != nil {
		t.Fatal(err)
	}
	if res := admit("u1", turns.PlanPro); !res.PlanChanged {
		t.Fatalf("pro assumed after a downgrade: %+v", res)
	}
	if res := admit("u1", turns.PlanFree); !res.Admitted {
		t.Fatalf("free assumed, free stored: %+v", res)
	}
	// The refused admissions wrote nothing: three turns counted, and the
	// runs of the refused ones do not exist.
	u, err := s.Usage(ctx, "u1", utcday.Of(now))
	if err != nil || u.Turns != 3 {
		t.Fatalf("usage %+v %v, want 3 turns", u, err)
	}
	for _, id := range []string{"p2", "p3", "p5"} {
		if _, err := s.GetRun(ctx, id); !errors.Is(err, turns.ErrNotFound) {
			t.Errorf("run %s of a refused admission: %v", id, err)
		}
	}
	// An unknown stored value reads as free (decodePlan), and admits so.
	if err := s.SetPlan(ctx, "u2", turns.Plan("gold"), now); err != nil {
		t.Fatal(err)
	}
	if res := admit("u2", turns.PlanFree); !res.Admitted {
		t.Fatalf("free assumed, unknown plan stored: %+v", res)
	}
	if _, err := s.Admit(ctx, turns.Admission{Run: newRun("p9", "u1", now), Limit: 5, Now: now}); err == nil {
		t.Error("an admission without a plan was accepted")
	}
}
