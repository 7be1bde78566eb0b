package handler_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/commonly/runtime/functions/reaper/handler"
	"github.com/commonly/runtime/shared/reaper"
)

type sweeper struct {
	rep   reaper.Report
	err   error
	calls int
}

func (s *sweeper) Sweep(context.Context) (reaper.Report, error) {
	s.calls++
	return s.rep, s.err
}

func scheduled(t *testing.T) events.EventBridgeEvent {
	t.Helper()
	raw, err := os.ReadFile("../testdata/scheduled.json")
	if err != nil {
		t.Fatal(err)
	}
	var ev events.EventBridgeEvent
	if err := json.Unmarshal(raw, &ev); err != nil {
		t.Fatal(err)
	}
	return ev
}

func TestHandleSweepsOnceAndReports(t *testing.T) {
	ev := scheduled(t)
	s := &sweeper{rep: reaper.Report{Listed: 12, Expired: 3, Killed: 2, AlreadyGone: 1, SourceFailures: 1, RunsInterrupted: 4, RunsRefunded: 1, Cut: true}}
	var logs bytes.Buffer
	h, err := handler.New(handler.Config{Sweeper: s, Log: slog.New(slog.NewJSONHandler(&logs, nil)), Now: func() time.Time { return ev.Time.Add(2 * time.Second) }})
	if err != nil {
		t.Fatal(err)
	}
	res, err := h.Handle(context.Background(), ev)
	if err != nil || s.calls != 1 {
		t.Fatalf("%+v, %v (%d sweeps)", res, err, s.calls)
	}
	want := handler.Result{Listed: 12, Expired: 3, Killed: 2, AlreadyGone: 1, SourceFailures: 1, RunsInterrupted: 4, RunsRefunded: 1, Cut: true}
	if res != want {
		t.Errorf("result %+v, want %+v", res, want)
	}
	if logs.Len() != 0 {
		t.Errorf("an on-time sweep logs nothing of its own: %s", logs.String())
	}
}

// The invocation fails only when the sweep read no source; a late
// schedule is said.
func TestHandleFailsWhenNoSourceCouldBeRead(t *testing.T) {
	ev := scheduled(t)
	s := &sweeper{err: errors.New("reaper: no source could be read: e2b list: status 500")}
	var logs bytes.Buffer
	h, err := handler.New(handler.Config{Sweeper: s, Log: slog.New(slog.NewJSONHandler(&logs, nil)), Now: func() time.Time { return ev.Time.Add(3 * time.Minute) }})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.Handle(context.Background(), ev); err == nil {
		t.Fatal("no error")
	}
	for _, want := range []string{"reaper sweep started late", "reaper sweep failed", ev.ID} {
		if !strings.Contains(logs.String(), want) {
			t.Errorf("log lacks %q:\n%s", want, logs.String())
		}
	}
	if _, err := handler.New(handler.Config{}); err == nil {
		t.Error("a handler without a sweeper")
	}
}
