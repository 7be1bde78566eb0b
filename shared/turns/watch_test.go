package turns_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/commonly/runtime/shared/runs"
	"github.com/commonly/runtime/shared/turns"
)

// scriptedEngine records a code turn's events as the native engine
// would, checkpointing between its two model calls; hold, when set,
// blocks the turn after its tool started until it is closed.
func scriptedEngine(fail bool, hold chan struct{}) *engine {
	return &engine{run: func(t turns.EngineTurn) turns.EngineResult {
		ev, r := t.Events, t.Run
		ev.Record(runs.ModelStarted{Step: 0, Model: "m"})
		ev.Record(runs.TextDelta{Step: 0, Text: "let me "})
		ev.Record(runs.TextDelta{Step: 0, Text: "run it"})
		r.Steps = append(r.Steps, runs.Step{Index: 0, Model: "m", PromptTokens: 100, CompletionTokens: 10, CostMicros: 30})
		r.Tokens.Add(100, 0, 10)
		r.AddCost(runs.Cost{ModelMicros: 30})
		ev.Record(runs.ModelFinished{Step: 0, Model: "m", PromptTokens: 100, CompletionTokens: 10, CostMicros: 30, FinishReason: "tool_calls"})
		ev.Record(runs.ToolStarted{Step: 0, CallID: "c1", Name: "commonly_run_code", Args: `{"code":"print(1)"}`})
		if hold != nil {
			<-hold
		}
		ev.Record(runs.SandboxCreated{SandboxID: "sb-1", Provider: "local"})
		ev.Record(runs.ToolFinished{Step: 0, CallID: "c1", Name: "commonly_run_code", OK: true, DurationMs: 5, Output: "1"})
		if err := t.Checkpoint(context.Background(), r); err != nil {
			panic(err)
		}
		ev.Record(runs.ModelStarted{Step: 1, Model: "m"})
		if fail {
			ev.Record(runs.ModelFinished{Step: 1, Model: "m", Estimated: true, ErrorKind: runs.ErrLLM})
			ev.Record(runs.SandboxKilled{SandboxID: "sb-1", OK: true})
			r.End(runs.StatusFailed, runs.ErrLLM, "the model proxy or its provider failed", *r.StartedAt)
			return turns.EngineResult{}
		}
		ev.Record(runs.TextDelta{Step: 1, Text: "1"})
		ev.Record(runs.ModelFinished{Step: 1, Model: "m", PromptTokens: 120, CompletionTokens: 2, CostMicros: 20, FinishReason: "stop"})
		ev.Record(runs.SandboxKilled{SandboxID: "sb-1", OK: true})
		r.Steps = append(r.Steps, runs.Step{Index: 1, Model: "m", PromptTokens: 120, CompletionTokens: 2, CostMicros: 20})
		r.Tokens.Add(120, 0, 2)
		r.AddCost(runs.Cost{ModelMicros: 20})
		r.FinalMessage = "1"
		r.End(runs.StatusSucceeded, "", "", *r.StartedAt)
		return turns.EngineResult{}
	}}
}

func (r *rig) watcher(t *testing.T) *turns.Watcher {
	t.Helper()
	w, err := turns.NewWatcher(turns.WatcherConfig{Runs: r.st})
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// watch reads a run's events after `after` to the end.
func watch(t *testing.T, r *rig, c turns.Caller, id string, after int64) ([]runs.StoredEvent, error) {
	t.Helper()
	var got []runs.StoredEvent
	err := r.watcher(t).Watch(context.Background(), c, id, turns.WatchOptions{After: after, Poll: 5 * time.Millisecond,
		Send: func(e runs.StoredEvent) error { got = append(got, e); return nil }})
	return got, err
}

func types(evs []runs.StoredEvent) []runs.EventType {
	var ts []runs.EventType
	for _, e := range evs {
		ts = append(ts, e.Type)
	}
	return ts
}

// checkSequence checks ids 1..n, each data a JSON object repeating its
// type and id.
func checkSequence(t *testing.T, evs []runs.StoredEvent) {
	t.Helper()
	var last time.Time
	for i, e := range evs {
		var d struct {
			Type runs.EventType `json:"type"`
			ID   int64          `json:"id"`
			At   time.Time      `json:"at"`
		}
		if err := json.Unmarshal([]byte(e.Data), &d); err != nil || d.Type != e.Type || d.ID != e.ID || e.ID != int64(i+1) {
			t.Fatalf("event %d: %+v (%v)", i, e, err)
		}
		// Times never go backwards in id order.
		if d.At.Before(last) {
			t.Fatalf("event %d (%s) at %s, before the one before it (%s)", e.ID, e.Type, d.At, last)
		}
		last = d.At
	}
}

func finishedOf(t *testing.T, e runs.StoredEvent) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(e.Data), &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// A code turn and a failing turn: every event, in order, run.finished
// last with the values GetRun gives; a reader resuming after a cut at
// any point gets exactly the rest.
func TestWatchRunOrderCompletenessAndResume(t *testing.T) {
	for _, fail := range []bool{false, true} {
		t.Run(fmt.Sprintf("fail=%v", fail), func(t *testing.T) {
			r := newRig(t, rigOpts{engines: map[turns.EngineName]turns.Engine{turns.Native: scriptedEngine(fail, nil)}})
			r.install(t, "inst-1", "user-1", turns.InstallRequest{})
			sub, err := r.submit(user, "inst-1", "run print(1)", "")
			if err != nil {
				t.Fatal(err)
			}
			all, err := watch(t, r, user, sub.Run.RunID, 0)
			if err != nil {
				t.Fatal(err)
			}
			// The first text of the turn goes at once, the rest of the
			// step's text in one delta (the fake clock does not move).
			want := []runs.EventType{runs.EventRunStarted, runs.EventModelStarted, runs.EventTextDelta, runs.EventTextDelta, runs.EventModelFinished,
				runs.EventToolStarted, runs.EventSandboxCreated, runs.EventToolFinished, runs.EventModelStarted}
			if fail {
				want = append(want, runs.EventModelFinished, runs.EventSandboxKilled, runs.EventRunFinished)
			} else {
				want = append(want, runs.EventTextDelta, runs.EventModelFinished, runs.EventSandboxKilled, runs.EventRunFinished)
			}
			if got := types(all); !reflect.DeepEqual(got, want) {
				t.Fatalf("events %v\nwant %v", got, want)
			}
			checkSequence(t, all)
			if d := finishedOf(t, all[3]); d["text"] != "run it" || d["step"] != 0.0 {
				t.Errorf("text.delta %v", d)
			}
			run, err := r.svc.GetRun(context.Background(), user, sub.Run.RunID)
			if err != nil {
				t.Fatal(err)
			}
			f := finishedOf(t, all[len(all)-1])
			if f["status"] != string(run.Status) || f["costMicros"] != float64(run.CostMicros) ||
				f["tokens"].(map[string]any)["total"] != float64(run.Tokens.Total) || (fail && f["errorKind"] != string(runs.ErrLLM)) {
				t.Errorf("run.finished %v, run %+v", f, run)
			}
			for cut := range int64(len(all) + 1) {
				rest, err := watch(t, r, user, sub.Run.RunID, cut)
				// The reader that has run.finished is told it has it all.
				if complete := cut == int64(len(all)); complete != errors.Is(err, turns.ErrStreamComplete) || (err != nil && !complete) {
					t.Fatalf("resumed after %d: %v", cut, err)
				}
				if len(rest) != len(all)-int(cut) || (len(rest) > 0 && !reflect.DeepEqual(rest, all[cut:])) {
					t.Fatalf("resumed after %d: %v %v", cut, types(rest), err)
				}
			}
		})
	}
}

// Someone else's run, and a missing one, are not found; nothing is sent.
func TestWatchRunForeignAndMissing(t *testing.T) {
	r := newRig(t, rigOpts{})
	r.install(t, "inst-1", "user-1", turns.InstallRequest{})
	sub, err := r.submit(user, "inst-1", "hi", "")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		caller turns.Caller
		id     string
	}{{other, sub.Run.RunID}, {user, "run_missing"}} {
		got, err := watch(t, r, c.caller, c.id, 0)
		if !errors.Is(err, turns.ErrNotFound) || len(got) != 0 {
			t.Errorf("%s reading %s: %v, %d events", c.caller.ID, c.id, err, len(got))
		}
	}
	if got, err := watch(t, r, admin, sub.Run.RunID, 0); err != nil || len(got) != 2 {
		t.Errorf("the service reads %v, %v", types(got), err)
	}
}

// Two readers on a run that finishes while they read: both see the tool
// start while it runs (an events-only write, the turn has not
// checkpointed yet), then the rest, ending with run.finished.
func TestWatchRunTwoReadersWhileTheRunFinishes(t *testing.T) {
	hold := make(chan struct{})
	q := &queue{}
	r := newRig(t, rigOpts{events: true, dispatcher: func(*turns.Worker) turns.Dispatcher { return q },
		engines: map[turns.EngineName]turns.Engine{turns.Native: scriptedEngine(false, hold)}})
	r.install(t, "inst-1", "user-1", turns.InstallRequest{})
	sub, err := r.submit(user, "inst-1", "run print(1)", "")
	if err != nil {
		t.Fatal(err)
	}
	id := sub.Run.RunID
	done := make(chan error, 1)
	go func() { _, err := r.worker.Execute(context.Background(), id); done <- err }()

	var mu sync.Mutex
	seen := make([][]runs.StoredEvent, 2)
	errs := make(chan error, 2)
	for i := range 2 {
		go func() {
			errs <- r.watcher(t).Watch(context.Background(), user, id, turns.WatchOptions{Poll: 10 * time.Millisecond,
				Send: func(e runs.StoredEvent) error { mu.Lock(); seen[i] = append(seen[i], e); mu.Unlock(); return nil }})
		}()
	}
	// Both readers see tool.started while the tool is held.
	deadline := time.Now().Add(10 * time.Second)
	for {
		mu.Lock()
		ok := len(seen[0]) == 6 && len(seen[1]) == 6
		mu.Unlock()
		if ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the readers did not see the tool start: %v / %v", types(seen[0]), types(seen[1]))
		}
		time.Sleep(10 * time.Millisecond)
	}
	if seen[0][5].Type != runs.EventToolStarted {
		t.Fatalf("events while the tool runs: %v", types(seen[0]))
	}
	close(hold)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	all, _ := watch(t, r, user, id, 0)
	if !reflect.DeepEqual(seen[0], all) || !reflect.DeepEqual(seen[1], all) || all[len(all)-1].Type != runs.EventRunFinished {
		t.Fatalf("readers saw %v and %v, the run has %v", types(seen[0]), types(seen[1]), types(all))
	}
	checkSequence(t, all)
}

// A watch ends with its context (the function's time) without run.finished;
// the reader resumes from its last id.
func TestWatchRunEndsWithItsContext(t *testing.T) {
	hold := make(chan struct{})
	defer close(hold)
	q := &queue{}
	r := newRig(t, rigOpts{events: true, dispatcher: func(*turns.Worker) turns.Dispatcher { return q },
		engines: map[turns.EngineName]turns.Engine{turns.Native: scriptedEngine(false, hold)}})
	r.install(t, "inst-1", "user-1", turns.InstallRequest{})
	sub, err := r.submit(user, "inst-1", "run", "")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _, _ = r.worker.Execute(context.Background(), sub.Run.RunID) }()
	ctx, cancel := context.WithTimeout(context.Background(), 700*time.Millisecond)
	defer cancel()
	var got []runs.StoredEvent
	beats := 0
	err = r.watcher(t).Watch(ctx, user, sub.Run.RunID, turns.WatchOptions{Poll: 10 * time.Millisecond, Heartbeat: time.Nanosecond,
		Send: func(e runs.StoredEvent) error { got = append(got, e); return nil },
		Beat: func() error { beats++; return nil }})
	if !errors.Is(err, context.DeadlineExceeded) || len(got) == 0 || got[len(got)-1].Type == runs.EventRunFinished {
		t.Fatalf("watch ended with %v after %v", err, types(got))
	}
	if beats == 0 {
		t.Error("no heartbeat on an idle stream")
	}
}
