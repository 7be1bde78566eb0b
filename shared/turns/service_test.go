package turns_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/commonly/runtime/shared/runs"
	"github.com/commonly/runtime/shared/turns"
)

func TestSubmitRunsATurnAndRecordsIt(t *testing.T) {
	r := newRig(t, rigOpts{})
	r.install(t, "inst-1", "user-1", turns.InstallRequest{})
	sub, err := r.submit(user, "inst-1", "hello", "")
	if err != nil {
		t.Fatal(err)
	}
	run := sub.Run
	if sub.Replayed || run.Status != runs.StatusSucceeded || run.FinalMessage != "answer to: hello" || run.Engine != "native" ||
		run.Trigger != turns.DefaultTrigger || run.Day != "2026-12-02" || !strings.HasPrefix(run.RunID, "run_") {
		t.Fatalf("run = %+v", run)
	}
	stored, err := r.svc.GetRun(context.Background(), user, run.RunID)
	if err != nil || stored.Status != runs.StatusSucceeded || stored.CostMicros != 42 {
		t.Fatalf("stored run = %+v, %v", stored, err)
	}
	if _, err := r.svc.GetRun(context.Background(), other, run.RunID); !errors.Is(err, turns.ErrNotFound) {
		t.Errorf("someone else's run: %v, want not found", err)
	}
	if _, err := r.svc.GetRun(context.Background(), admin, run.RunID); err != nil {
		t.Errorf("the backend reading the run: %v", err)
	}
	// The run's cost is not the turn's to count: the alarm function's
	// ledger adds it to the day from the runs stream.
	if u := r.usage(t, user); u.Plan != turns.PlanFree || u.TurnsUsed != 1 || u.TurnsLimit != 30 || u.CostMicros != 0 ||
		!u.ResetsAt.Equal(time.Date(2026, 12, 3, 0, 0, 0, 0, time.UTC)) {
		t.Errorf("usage = %+v", u)
	}
	if emf := r.emf.String(); !strings.Contains(emf, `"TurnsAdmitted":1`) || strings.Contains(emf, "user-1") {
		t.Errorf("metrics: %s", emf)
	}
}

func TestSubmitRefusesBeforeCounting(t *testing.T) {
	r := newRig(t, rigOpts{})
	r.install(t, "inst-1", "user-1", turns.InstallRequest{})
	r.install(t, "inst-do", "user-1", turns.InstallRequest{Engine: ptr("durable-object")})
	cases := []struct {
		name    string
		c       turns.Caller
		install string
		req     turns.TurnRequest
		want    error
		field   string
	}{
		{"no identity", turns.Caller{}, "inst-1", turns.TurnRequest{Message: "hi"}, turns.ErrUnauthenticated, ""},
		{"unknown install", user, "nope", turns.TurnRequest{Message: "hi"}, turns.ErrNotFound, ""},
		{"invalid install id", user, "a#b", turns.TurnRequest{Message: "hi"}, turns.ErrInvalid, "installId"},
		{"a dot-segment install id", user, "..", turns.TurnRequest{Message: "hi"}, turns.ErrInvalid, "installId"},
		// Answered as a missing install, so install ids cannot be probed.
		{"someone else's install", other, "inst-1", turns.TurnRequest{Message: "hi"}, turns.ErrNotFound, ""},
		{"no message", user, "inst-1", turns.TurnRequest{}, turns.ErrInvalid, "message"},
		{"message too long", user, "inst-1", turns.TurnRequest{Message: strings.Repeat("é", turns.MaxMessageChars+1)}, turns.ErrInvalid, "message"},
		{"invalid UTF-8", user, "inst-1", turns.TurnRequest{Message: "\xff"}, turns.ErrInvalid, "message"},
		{"trigger too long", user, "inst-1", turns.TurnRequest{Message: "hi", Trigger: strings.Repeat("t", turns.MaxTriggerChars+1)}, turns.ErrInvalid, "trigger"},
		{"key too long", user, "inst-1", turns.TurnRequest{Message: "hi", IdempotencyKey: strings.Repeat("k", turns.MaxIdemKeyChars+1)}, turns.ErrInvalid, "Idempotency-Key"},
		// The key is stored on the run: DynamoDB refuses a string that is not UTF-8.
		{"key not UTF-8", user, "inst-1", turns.TurnRequest{Message: "hi", IdempotencyKey: "k\xff"}, turns.ErrInvalid, "Idempotency-Key"},
		{"key with a control character", user, "inst-1", turns.TurnRequest{Message: "hi", IdempotencyKey: "k\n"}, turns.ErrInvalid, "Idempotency-Key"},
		{"key not ASCII", user, "inst-1", turns.TurnRequest{Message: "hi", IdempotencyKey: "clé"}, turns.ErrInvalid, "Idempotency-Key"},
		{"fallback not configured", user, "inst-do", turns.TurnRequest{Message: "hi"}, turns.ErrFallbackUnconfigured, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := r.svc.Submit(context.Background(), c.c, c.install, c.req)
			if !errors.Is(err, c.want) {
				t.Fatalf("err = %v, want %v", err, c.want)
			}
			if inv, ok := errors.AsType[*turns.InvalidError](err); c.field != "" && (!ok || inv.Field != c.field) {
				t.Errorf("field of %v, want %s", err, c.field)
			}
		})
	}
	if u := r.usage(t, user); u.TurnsUsed != 0 || r.native.count() != 0 {
		t.Errorf("refused turns counted %d, ran %d", u.TurnsUsed, r.native.count())
	}
}

// Under any concurrency exactly the plan's limit is admitted, across the
// user's installs; the refusal says what was used and when it resets.
func TestCeilingAdmitsExactlyTheLimit(t *testing.T) {
	r := newRig(t, rigOpts{limits: "free=5,pro=10"})
	r.install(t, "inst-a", "user-1", turns.InstallRequest{})
	r.install(t, "inst-b", "user-1", turns.InstallRequest{})
	var admitted, refused atomic.Int64
	var wg sync.WaitGroup
	for i := range 20 {
		wg.Go(func() {
			_, err := r.submit(user, []string{"inst-a", "inst-b"}[i%2], fmt.Sprint("turn ", i), "")
			switch {
			case err == nil:
				admitted.Add(1)
			case errors.Is(err, turns.ErrCeilingReached):
				refused.Add(1)
			default:
				t.Errorf("turn %d: %v", i, err)
			}
		})
	}
	wg.Wait()
	if admitted.Load() != 5 || refused.Load() != 15 {
		t.Fatalf("admitted %d, refused %d; want 5 and 15", admitted.Load(), refused.Load())
	}
	r.clock.Set(time.Date(2026, 12, 2, 23, 0, 0, 0, time.UTC))
	_, err := r.submit(user, "inst-a", "one more", "")
	ce, ok := errors.AsType[*turns.CeilingError](err)
	if !ok || ce.Limit != 5 || ce.Used != 5 || !ce.ResetsAt.Equal(time.Date(2026, 12, 3, 0, 0, 0, 0, time.UTC)) || ce.RetryAfter != time.Hour {
		t.Fatalf("refusal = %+v (%v)", ce, err)
	}
	if !strings.Contains(r.emf.String(), `"TurnsRefusedAtCeiling":1`) {
		t.Error("refusals are not counted in metrics")
	}

	// A new UTC day, and a plan upgrade, open the ceiling again.
	r.clock.Set(time.Date(2026, 12, 3, 0, 0, 0, 0, time.UTC))
	if _, err := r.submit(user, "inst-a", "new day", ""); err != nil {
		t.Fatalf("first turn of the day: %v", err)
	}
	if _, err := r.svc.SetPlan(context.Background(), admin, "user-1", "pro"); err != nil {
		t.Fatal(err)
	}
	if u := r.usage(t, user); u.Plan != turns.PlanPro || u.TurnsLimit != 10 || u.TurnsUsed != 1 {
		t.Errorf("usage after the upgrade = %+v", u)
	}
}

func TestIdempotencyKey(t *testing.T) {
	r := newRig(t, rigOpts{})
	r.install(t, "inst-1", "user-1", turns.InstallRequest{})
	r.install(t, "inst-2", "user-2", turns.InstallRequest{})
	first, err := r.submit(user, "inst-1", "hello", "key-1")
	if err != nil {
		t.Fatal(err)
	}
	again, err := r.submit(user, "inst-1", "hello", "key-1")
	if err != nil || !again.Replayed || again.Run.RunID != first.Run.RunID {
		t.Fatalf("replay: %+v, %v", again, err)
	}
	if _, err := r.submit(user, "inst-1", "something else", "key-1"); !errors.Is(err, turns.ErrIdempotencyConflict) {
		t.Errorf("same key, other body: %v", err)
	}
	theirs, err := r.submit(other, "inst-2", "hello", "key-1")
	if err != nil || theirs.Replayed || theirs.Run.RunID == first.Run.RunID {
		t.Errorf("another caller's key: %+v, %v", theirs, err)
	}
	if u := r.usage(t, user); u.TurnsUsed != 1 || r.native.count() != 2 {
		t.Errorf("replays counted: %d used, %d runs", u.TurnsUsed, r.native.count())
	}
}

// planReads counts the store's plan reads.
type planReads struct {
	turns.Store
	n atomic.Int64
}

func (s *planReads) GetPlan(ctx context.Context, userID string) (turns.Plan, error) {
	s.n.Add(1)
	return s.Store.GetPlan(ctx, userID)
}

func (s *planReads) GetInstallAndPlan(ctx context.Context, installID, userID string) (*turns.Install, turns.Plan, error) {
	s.n.Add(1)
	return s.Store.GetInstallAndPlan(ctx, installID, userID)
}

// A remembered plan is a guess the admission checks: changed elsewhere,
// it costs one read and a second admission, never a turn under another
// plan's ceiling.
func TestRememberedPlanIsChecked(t *testing.T) {
	reads := &planReads{}
	r := newRig(t, rigOpts{limits: "free=1,pro=2", installTTL: time.Minute, storeWrap: func(s turns.Store) turns.Store { reads.Store = s; return reads }})
	r.install(t, "inst-1", "user-1", turns.InstallRequest{})
	if _, err := r.submit(user, "inst-1", "one", ""); err != nil {
		t.Fatal(err)
	}
	// Upgraded by another container: the store only.
	if err := r.st.SetPlan(context.Background(), "user-1", turns.PlanPro, r.clock.Now()); err != nil {
		t.Fatal(err)
	}
	before := reads.n.Load()
	if _, err := r.submit(user, "inst-1", "two", ""); err != nil {
		t.Fatalf("a turn under the new plan: %v", err)
	}
	if got := reads.n.Load() - before; got != 1 {
		t.Errorf("plan reads for the turn after the change: %d, want 1 (after the failed check; the install is cached)", got)
	}
	if _, err := r.submit(user, "inst-1", "three", ""); !errors.Is(err, turns.ErrCeilingReached) {
		t.Errorf("third turn on pro=2: %v", err)
	}
}

// flippingPlan answers every admission as though the plan had just changed.
type flippingPlan struct {
	turns.Store
	admits atomic.Int64
}

func (s *flippingPlan) Admit(context.Context, turns.Admission) (turns.AdmitResult, error) {
	s.admits.Add(1)
	return turns.AdmitResult{PlanChanged: true}, nil
}

func TestPlanThatKeepsChangingFailsClosed(t *testing.T) {
	flip := &flippingPlan{}
	r := newRig(t, rigOpts{storeWrap: func(s turns.Store) turns.Store { flip.Store = s; return flip }})
	r.install(t, "inst-1", "user-1", turns.InstallRequest{})
	if _, err := r.submit(user, "inst-1", "hi", ""); !errors.Is(err, turns.ErrUnavailable) || flip.admits.Load() != 3 {
		t.Errorf("err %v after %d admissions, want unavailable after 3", err, flip.admits.Load())
	}
}

// brokenAdmit fails the admission write, as an unreachable table would.
type brokenAdmit struct{ turns.Store }

func (brokenAdmit) Admit(context.Context, turns.Admission) (turns.AdmitResult, error) {
	return turns.AdmitResult{}, errors.New("dial tcp: connection refused")
}

func TestUncountableTurnFailsClosed(t *testing.T) {
	r := newRig(t, rigOpts{storeWrap: func(s turns.Store) turns.Store { return brokenAdmit{s} }})
	r.install(t, "inst-1", "user-1", turns.InstallRequest{})
	if _, err := r.submit(user, "inst-1", "hi", ""); !errors.Is(err, turns.ErrUnavailable) || r.native.count() != 0 {
		t.Errorf("err %v, %d runs; want unavailable and nothing run", err, r.native.count())
	}
}

// failingDispatch cannot start turns.
type failingDispatch struct{}

func (failingDispatch) Dispatch(context.Context, *runs.Run) (*runs.Run, error) {
	return nil, errors.New("lambda: throttled")
}

// A turn that could not be dispatched is closed and given back.
func TestUndispatchedTurnIsRefunded(t *testing.T) {
	r := newRig(t, rigOpts{dispatcher: func(*turns.Worker) turns.Dispatcher { return failingDispatch{} }})
	r.install(t, "inst-1", "user-1", turns.InstallRequest{})
	if _, err := r.submit(user, "inst-1", "hi", ""); !errors.Is(err, turns.ErrUnavailable) {
		t.Fatalf("err = %v", err)
	}
	if u := r.usage(t, user); u.TurnsUsed != 0 {
		t.Errorf("an undispatched turn counts: %+v", u)
	}
}

func TestWaitRunReturnsAFinalRunAtOnce(t *testing.T) {
	r := newRig(t, rigOpts{})
	r.install(t, "inst-1", "user-1", turns.InstallRequest{})
	sub, err := r.submit(user, "inst-1", "hi", "")
	if err != nil {
		t.Fatal(err)
	}
	got, err := r.svc.WaitRun(context.Background(), user, sub.Run, time.Hour)
	if err != nil || got != sub.Run {
		t.Errorf("WaitRun of a final run: %v, %v", got, err)
	}
	queued := &runs.Run{RunID: sub.Run.RunID, Status: runs.StatusQueued}
	if got, err := r.svc.WaitRun(context.Background(), user, queued, 0); err != nil || got != queued {
		t.Errorf("WaitRun without time: %v, %v", got, err)
	}
}

func TestNewServiceChecksItsConfig(t *testing.T) {
	_, err := turns.NewService(turns.ServiceConfig{Limits: turns.Limits{turns.PlanFree: 1}, DefaultEngine: "lambda"})
	for _, want := range []string{"store", "dispatcher", "plan pro", "default engine"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("err = %v, want it to name the %s", err, want)
		}
	}
}

func ptr[T any](v T) *T { return &v }
