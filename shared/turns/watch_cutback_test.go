package turns_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/commonly/runtime/shared/runs"
	"github.com/commonly/runtime/shared/turns"
)

// oneRun serves one run, as the runs table holds it.
type oneRun struct{ r *runs.Run }

func (o oneRun) GetRun(context.Context, string) (*runs.Run, error) { return o.r, nil }

// A run closed from a copy read before the worker's last events-only
// write (the reaper closing an abandoned run) keeps fewer events than a
// reader already had. The reader still gets run.finished, after its own
// last id; a reader that has run.finished gets nothing more; one before
// the cut gets the stored rest and the end, as always.
func TestFinishedRunCutBackStillEndsTheStream(t *testing.T) {
	started := time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)
	r := &runs.Run{RunID: "run-1", UserID: "user-1", Status: runs.StatusInterrupted, StartedAt: &started, CompletedAt: &started}
	for id := int64(1); id <= 3; id++ {
		r.Events = append(r.Events, runs.StoredEvent{ID: id, Type: runs.EventModelStarted, Data: runs.EncodeEvent(id, runs.ModelStarted{Step: int(id - 1), Model: "m"}, started)})
	}
	w, err := turns.NewWatcher(turns.WatcherConfig{Runs: oneRun{r}})
	if err != nil {
		t.Fatal(err)
	}
	read := func(after int64) []runs.StoredEvent {
		t.Helper()
		var got []runs.StoredEvent
		err := w.Watch(context.Background(), turns.Caller{ID: "user-1"}, "run-1", turns.WatchOptions{After: after, Poll: time.Millisecond,
			Send: func(e runs.StoredEvent) error { got = append(got, e); return nil }})
		// The reader that has run.finished is told the stream is complete.
		if (after == 4) != errors.Is(err, turns.ErrStreamComplete) || (err != nil && after != 4) {
			t.Fatalf("after %d: %v", after, err)
		}
		return got
	}
	for _, c := range []struct {
		after int64
		ids   []int64
	}{
		{after: 1, ids: []int64{2, 3, 4}}, // before the cut: the rest, then the end
		{after: 4, ids: nil},              // has run.finished
		{after: 6, ids: []int64{7}},       // had events the close cut away
		// The largest id a reader may have: no id wraps past it.
		{after: turns.MaxEventID, ids: []int64{turns.MaxEventID + 1}},
	} {
		got := read(c.after)
		if len(got) != len(c.ids) {
			t.Fatalf("after %d: %d events, want ids %v", c.after, len(got), c.ids)
		}
		for i, e := range got {
			if e.ID != c.ids[i] {
				t.Errorf("after %d: event %d has id %d, want %d", c.after, i, e.ID, c.ids[i])
			}
		}
		if n := len(got); n > 0 && got[n-1].Type != runs.EventRunFinished {
			t.Errorf("after %d: last event %s, want run.finished", c.after, got[n-1].Type)
		}
	}
}

// run.finished is never stamped before the event it follows: a sandbox
// killed after the final write's clock read is followed by a run.finished
// at the kill's time, not the earlier completedAt.
func TestRunFinishedNeverBeforeTheLastEvent(t *testing.T) {
	done := time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)
	killed := done.Add(1500 * time.Millisecond)
	r := &runs.Run{RunID: "run-1", UserID: "user-1", Status: runs.StatusSucceeded, CompletedAt: &done,
		Events: []runs.StoredEvent{{ID: 1, Type: runs.EventSandboxKilled, Data: runs.EncodeEvent(1, runs.SandboxKilled{SandboxID: "sb", OK: true}, killed)}}}
	w, err := turns.NewWatcher(turns.WatcherConfig{Runs: oneRun{r}})
	if err != nil {
		t.Fatal(err)
	}
	var got []runs.StoredEvent
	if err := w.Watch(context.Background(), turns.Caller{ID: "user-1"}, "run-1", turns.WatchOptions{
		Send: func(e runs.StoredEvent) error { got = append(got, e); return nil }}); err != nil {
		t.Fatal(err)
	}
	var fin struct {
		At          time.Time `json:"at"`
		CompletedAt time.Time `json:"completedAt"`
	}
	if len(got) != 2 || json.Unmarshal([]byte(got[1].Data), &fin) != nil || !fin.At.Equal(killed) || !fin.CompletedAt.Equal(done) {
		t.Fatalf("%+v", got)
	}
}
