package turns_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/commonly/runtime/shared/runs"
	"github.com/commonly/runtime/shared/turns"
)

// queue keeps dispatched runs for the test to execute, as Lambda's
// asynchronous invoke would.
type queue struct {
	mu  sync.Mutex
	ids []string
}

func (q *queue) Dispatch(_ context.Context, run *runs.Run) (*runs.Run, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.ids = append(q.ids, run.RunID)
	return nil, nil
}

// queued submits a turn that waits in q.
func queued(t *testing.T, o rigOpts) (*rig, string) {
	t.Helper()
	q := &queue{}
	o.dispatcher = func(*turns.Worker) turns.Dispatcher { return q }
	r := newRig(t, o)
	r.install(t, "inst-1", "user-1", turns.InstallRequest{})
	sub, err := r.submit(user, "inst-1", "hi", "")
	if err != nil {
		t.Fatal(err)
	}
	if sub.Run.Status != runs.StatusQueued || len(q.ids) != 1 {
		t.Fatalf("submitted %s, %d dispatched", sub.Run.Status, len(q.ids))
	}
	return r, q.ids[0]
}

// A retried dispatch never runs a turn twice.
func TestExecuteClaimsOnce(t *testing.T) {
	r, id := queued(t, rigOpts{})
	for range 2 {
		run, err := r.worker.Execute(context.Background(), id)
		if err != nil || run.Status != runs.StatusSucceeded {
			t.Fatalf("execute: %+v, %v", run, err)
		}
	}
	if r.native.count() != 1 {
		t.Errorf("the turn ran %d times", r.native.count())
	}
	if _, err := r.worker.Execute(context.Background(), "run_unknown"); err == nil {
		t.Error("executing an unknown run succeeded")
	}
	if emf := r.emf.String(); !strings.Contains(emf, `"Turns":1`) || !strings.Contains(emf, `"Status":"succeeded"`) || strings.Contains(emf, "TurnsFailed") {
		t.Errorf("finished turns are not counted, or a success counted as a failure: %s", emf)
	}
}

// A worker that died mid-turn leaves its run running under its lease. A
// later dispatch fails while the lease lives (Lambda tries it again
// later) and, once it lapsed, closes a run with no attempts left as
// interrupted, giving the turn back.
func TestAbandonedRunIsClosedByALaterDispatch(t *testing.T) {
	r, id := queued(t, rigOpts{})
	claimed, err := r.st.ClaimRun(context.Background(), id, r.clock.Now())
	if err != nil {
		t.Fatal(err)
	}
	if claimed.Attempts != 1 || claimed.MaxAttempts != turns.DefaultMaxAttempts || claimed.Lease.Token == "" ||
		!claimed.Lease.Until().Equal(r.clock.Now().Add(turns.LeaseDuration)) || claimed.Lease.WrittenBy != 1 {
		t.Fatalf("claimed %+v", claimed)
	}
	r.setAttempts(t, id, turns.DefaultMaxAttempts)
	r.clock.Set(claimed.Lease.Until())
	if run, err := r.worker.Execute(context.Background(), id); !errors.Is(err, turns.ErrLeaseHeld) || run.Status != runs.StatusRunning {
		t.Fatalf("within the lease: %+v, %v", run, err)
	}
	r.clock.Advance(time.Millisecond)
	if _, err := r.worker.Execute(context.Background(), id); err != nil {
		t.Fatal(err)
	}
	run, err := r.svc.GetRun(context.Background(), user, id)
	if err != nil || run.Status != runs.StatusInterrupted || run.ErrorKind != runs.ErrInterrupted || !run.Refunded ||
		run.ErrorMessage != "the turn's worker stopped before the turn ended" {
		t.Fatalf("abandoned run = %+v, %v", run, err)
	}
	if r.native.count() != 0 || r.usage(t, user).TurnsUsed != 0 {
		t.Errorf("ran %d times, %d turns counted", r.native.count(), r.usage(t, user).TurnsUsed)
	}
}

// A dispatch that comes after ClaimWindow does not start the turn: the
// reaper may close its run before any turn could end. Once no dispatch
// can claim it, a later one closes it, refunded.
func TestLateDispatchDoesNotStartTheTurn(t *testing.T) {
	r, id := queued(t, rigOpts{})
	admitted, err := r.st.GetRun(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	r.clock.Set(admitted.CreatedAt.Add(turns.ClaimWindow + time.Millisecond))
	if run, err := r.worker.Execute(context.Background(), id); err != nil || run.Status != runs.StatusQueued {
		t.Fatalf("a late dispatch: %+v, %v", run, err)
	}
	r.clock.Set(turns.OpenUntil(admitted).Add(time.Millisecond))
	run, err := r.worker.Execute(context.Background(), id)
	if err != nil || run.Status != runs.StatusInterrupted || !run.Refunded || run.ErrorMessage != "the turn was not started in time" {
		t.Fatalf("a dispatch once the run is abandoned: %+v, %v", run, err)
	}
	if r.native.count() != 0 || r.usage(t, user).TurnsUsed != 0 {
		t.Errorf("ran %d times, %d turns counted", r.native.count(), r.usage(t, user).TurnsUsed)
	}
}

// Every path ends in a final, written run.
func TestEveryPathEndsFinal(t *testing.T) {
	cases := []struct {
		name     string
		run      func(cancel context.CancelFunc) func(turns.EngineTurn) turns.EngineResult
		engines  bool // the deployment has no engine for the run
		status   runs.Status
		kind     runs.ErrorKind
		refunded bool
	}{
		{"engine panics", func(context.CancelFunc) func(turns.EngineTurn) turns.EngineResult {
			return func(turns.EngineTurn) turns.EngineResult { panic("engine bug") }
		}, false, runs.StatusFailed, runs.ErrUnknown, false},
		{"engine leaves the run running", func(context.CancelFunc) func(turns.EngineTurn) turns.EngineResult {
			return func(turns.EngineTurn) turns.EngineResult { return turns.EngineResult{} }
		}, false, runs.StatusFailed, runs.ErrUnknown, false},
		{"cancelled mid-turn", func(cancel context.CancelFunc) func(turns.EngineTurn) turns.EngineResult {
			return func(turns.EngineTurn) turns.EngineResult { cancel(); return turns.EngineResult{} }
		}, false, runs.StatusInterrupted, runs.ErrInterrupted, false},
		{"infrastructure failure", func(context.CancelFunc) func(turns.EngineTurn) turns.EngineResult {
			return func(t turns.EngineTurn) turns.EngineResult {
				t.Run.End(runs.StatusFailed, runs.ErrSandbox, "sandbox lost", *t.Run.StartedAt)
				return turns.EngineResult{Infrastructure: true}
			}
		}, false, runs.StatusFailed, runs.ErrSandbox, true},
		{"engine not configured", nil, true, runs.StatusFailed, runs.ErrConfig, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			o := rigOpts{}
			if c.engines {
				o.engines = map[turns.EngineName]turns.Engine{}
			}
			r, id := queued(t, o)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			if c.run != nil {
				r.native.run = c.run(cancel)
			}
			if _, err := r.worker.Execute(ctx, id); err != nil {
				t.Fatal(err)
			}
			run, err := r.svc.GetRun(context.Background(), user, id)
			if err != nil || run.Status != c.status || run.ErrorKind != c.kind || run.Refunded != c.refunded || run.CompletedAt == nil {
				t.Fatalf("run = %s %s refunded %v (%v), want %s %s refunded %v", run.Status, run.ErrorKind, run.Refunded, err, c.status, c.kind, c.refunded)
			}
			want := int64(1)
			if c.refunded {
				want = 0
			}
			if u := r.usage(t, user); u.TurnsUsed != want {
				t.Errorf("turns used %d, want %d", u.TurnsUsed, want)
			}
			// The dashboard's "Failures by errorKind" reads this line.
			if emf := r.emf.String(); !strings.Contains(emf, `"ErrorKind":"`+string(c.kind)+`"`) || !strings.Contains(emf, `"TurnsFailed":1`) {
				t.Errorf("the failure is not counted by its kind: %s", emf)
			}
		})
	}
}

// unreadableInstall fails install reads after the admission.
type unreadableInstall struct {
	turns.Store
	fail bool
}

func (s *unreadableInstall) GetInstall(ctx context.Context, id string) (*turns.Install, error) {
	if s.fail {
		return nil, errors.New("dial tcp: connection refused")
	}
	return s.Store.GetInstall(ctx, id)
}

func TestUnreadableInstallFailsAsConfigAndRefunds(t *testing.T) {
	st := &unreadableInstall{}
	r, id := queued(t, rigOpts{storeWrap: func(s turns.Store) turns.Store { st.Store = s; return st }})
	st.fail = true
	if _, err := r.worker.Execute(context.Background(), id); err != nil {
		t.Fatal(err)
	}
	run, err := r.svc.GetRun(context.Background(), user, id)
	if err != nil || run.Status != runs.StatusFailed || run.ErrorKind != runs.ErrConfig || !run.Refunded || r.native.count() != 0 {
		t.Fatalf("run = %+v, %v", run, err)
	}
}

func TestNewWorkerChecksItsConfig(t *testing.T) {
	_, err := turns.NewWorker(turns.WorkerConfig{Engines: map[turns.EngineName]turns.Engine{"lambda": &engine{}, turns.Native: nil}})
	for _, want := range []string{"store", `"lambda"`, "native is nil"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("err = %v, want it to name %s", err, want)
		}
	}
}
