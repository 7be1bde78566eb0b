package turns_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/commonly/runtime/shared/runs"
	"github.com/commonly/runtime/shared/turns"
)

// allRuns follows a user's pages of size limit to the end.
func allRuns(t *testing.T, list func(turns.RunsQuery) (*turns.RunPage, error), limit int) ([]runs.Summary, int) {
	t.Helper()
	var got []runs.Summary
	cursor, pages := "", 0
	for {
		p, err := list(turns.RunsQuery{Cursor: cursor, Limit: limit})
		if err != nil {
			t.Fatalf("page %d: %v", pages, err)
		}
		if pages++; len(p.Runs) > limit || pages > 20 {
			t.Fatalf("page %d holds %d runs, the limit is %d", pages, len(p.Runs), limit)
		}
		got = append(got, p.Runs...)
		if p.Next == "" {
			return got, pages
		}
		cursor = p.Next
	}
}

// A user's runs, newest first, a page at a time: finished ones from the
// index's summary, open ones as they are now, each as GET /v1/runs/{id}
// shows it; only the caller's own, whatever cursor is sent; the service
// lists anyone's.
func TestListRunsNewestFirst(t *testing.T) {
	q := &queue{}
	r := newRig(t, rigOpts{dispatcher: func(*turns.Worker) turns.Dispatcher { return q }})
	r.native.run = func(et turns.EngineTurn) turns.EngineResult {
		if strings.Contains(et.Run.Message, "fail") {
			et.Run.AddCost(runs.Cost{ModelMicros: 7})
			et.Run.End(runs.StatusFailed, runs.ErrLLM, "the model failed", *et.Run.StartedAt)
			return turns.EngineResult{}
		}
		et.Run.Model = "offline-demo"
		et.Run.Tokens.Add(10, 2, 5)
		et.Run.AddCost(runs.Cost{ModelMicros: 42})
		et.Run.End(runs.StatusSucceeded, "", "", *et.Run.StartedAt)
		return turns.EngineResult{}
	}
	r.install(t, "inst-1", "user-1", turns.InstallRequest{})
	r.install(t, "inst-2", "user-2", turns.InstallRequest{})
	ctx := context.Background()
	var ids []string // oldest first
	for i, msg := range []string{"m0", "m1", "fail m2", "m3", "m4"} {
		sub, err := r.submit(user, "inst-1", msg, "")
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, sub.Run.RunID)
		if i < 4 { // the newest stays queued
			if _, err := r.worker.Execute(ctx, sub.Run.RunID); err != nil {
				t.Fatal(err)
			}
		}
		r.clock.Advance(time.Second)
	}
	if _, err := r.submit(other, "inst-2", "theirs", ""); err != nil {
		t.Fatal(err)
	}

	want := func() []runs.Summary {
		var w []runs.Summary
		for i := len(ids) - 1; i >= 0; i-- {
			run, err := r.svc.GetRun(ctx, user, ids[i])
			if err != nil {
				t.Fatal(err)
			}
			w = append(w, run.Summary())
		}
		return w
	}
	mine := func(q turns.RunsQuery) (*turns.RunPage, error) { return r.svc.MyRuns(ctx, user, q) }
	for _, limit := range []int{1, 2, 5, 100} {
		got, pages := allRuns(t, mine, limit)
		if !equalSummaries(got, want()) {
			t.Errorf("limit %d: listed\n%s\nwant\n%s", limit, summaries(got), summaries(want()))
		}
		if limit < 5 && pages < 5/limit {
			t.Errorf("limit %d: %d pages", limit, pages)
		}
	}
	first, _ := mine(turns.RunsQuery{})
	if first.Runs[0].Status != runs.StatusQueued || first.Runs[2].Status != runs.StatusFailed || first.Runs[2].ErrorKind != runs.ErrLLM ||
		first.Runs[1].CostMicros != 42 || first.Runs[1].Tokens.Total != 15 || first.Runs[1].Model != "offline-demo" || first.Runs[1].CompletedAt == nil {
		t.Errorf("first page:\n%s", summaries(first.Runs))
	}

	// The queued run, run now, is listed as it ended.
	if _, err := r.worker.Execute(ctx, ids[4]); err != nil {
		t.Fatal(err)
	}
	if got, _ := allRuns(t, mine, 3); !equalSummaries(got, want()) || got[0].Status != runs.StatusSucceeded {
		t.Errorf("after the last run finished:\n%s", summaries(got))
	}

	// The service lists anyone's; a user only their own.
	byService, _ := allRuns(t, func(q turns.RunsQuery) (*turns.RunPage, error) { return r.svc.UserRuns(ctx, admin, "user-1", q) }, 2)
	if !equalSummaries(byService, want()) {
		t.Errorf("the service lists\n%s", summaries(byService))
	}
	theirs, _ := allRuns(t, func(q turns.RunsQuery) (*turns.RunPage, error) { return r.svc.MyRuns(ctx, other, q) }, 10)
	if len(theirs) != 1 || theirs[0].UserID != "user-2" || theirs[0].InstallID != "inst-2" {
		t.Errorf("user-2 lists\n%s", summaries(theirs))
	}
	// A cursor of user-1's pages names a place, not a user.
	p, _ := mine(turns.RunsQuery{Limit: 1})
	withTheirCursor, err := r.svc.MyRuns(ctx, other, turns.RunsQuery{Cursor: p.Next})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range withTheirCursor.Runs {
		if s.UserID != "user-2" {
			t.Errorf("user-2 read %s of %s with user-1's cursor", s.RunID, s.UserID)
		}
	}
	if _, err := r.svc.UserRuns(ctx, user, "user-1", turns.RunsQuery{}); !errors.Is(err, turns.ErrForbidden) {
		t.Errorf("a user on the service's route: %v", err)
	}
	if _, err := r.svc.MyRuns(ctx, turns.Caller{}, turns.RunsQuery{}); !errors.Is(err, turns.ErrUnauthenticated) {
		t.Errorf("no caller: %v", err)
	}
	if none, err := r.svc.UserRuns(ctx, admin, "nobody", turns.RunsQuery{}); err != nil || len(none.Runs) != 0 || none.Next != "" || none.Runs == nil {
		t.Errorf("a user without runs: %+v, %v", none, err)
	}
}

// A bad page request is refused, naming the field.
func TestListRunsRefusesBadQueries(t *testing.T) {
	r := newRig(t, rigOpts{})
	ctx := context.Background()
	cases := []struct {
		name  string
		list  func() error
		field string
	}{
		{"limit below one", func() error { _, err := r.svc.MyRuns(ctx, user, turns.RunsQuery{Limit: -1}); return err }, "limit"},
		{"limit above the page", func() error {
			_, err := r.svc.MyRuns(ctx, user, turns.RunsQuery{Limit: turns.MaxRunsPage + 1})
			return err
		}, "limit"},
		{"a made-up cursor", func() error {
			_, err := r.svc.MyRuns(ctx, user, turns.RunsQuery{Cursor: "bm90IGEgY3Vyc29y"})
			return err
		}, "cursor"},
		{"a bad user", func() error { _, err := r.svc.UserRuns(ctx, admin, "a#b", turns.RunsQuery{}); return err }, "userId"},
	}
	for _, c := range cases {
		err := c.list()
		var inv *turns.InvalidError
		if !errors.As(err, &inv) || inv.Field != c.field {
			t.Errorf("%s: %v, want invalid %s", c.name, err, c.field)
		}
	}
}

func equalSummaries(a, b []runs.Summary) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !reflect.DeepEqual(norm(a[i]), norm(b[i])) {
			return false
		}
	}
	return true
}

// norm makes times comparable whatever their location.
func norm(s runs.Summary) runs.Summary {
	s.CreatedAt = s.CreatedAt.UTC()
	for _, p := range []**time.Time{&s.StartedAt, &s.CompletedAt} {
		if *p != nil {
			u := (*p).UTC()
			*p = &u
		}
	}
	return s
}

func summaries(ss []runs.Summary) string {
	var b strings.Builder
	for _, s := range ss {
		fmt.Fprintf(&b, "  %s %s %s %s µ$%d %d tokens\n", s.RunID, s.UserID, s.Status, s.ErrorKind, s.CostMicros, s.Tokens.Total)
	}
	return b.String()
}
