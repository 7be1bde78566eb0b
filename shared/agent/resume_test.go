package agent

import (
	"context"
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/commonly/runtime/shared/llm"
	"github.com/commonly/runtime/shared/money"
	"github.com/commonly/runtime/shared/runs"
	"github.com/commonly/runtime/shared/tools"
)

// fakeJournal keeps what the loop appends, with the run as each entry
// left it: what a write carrying the entries would have made durable.
type fakeJournal struct {
	entries []string
	runs    []runs.Run
}

func (j *fakeJournal) Append(data string, r *runs.Run) {
	j.entries = append(j.entries, data)
	snap := *r
	snap.Steps = append([]runs.Step(nil), r.Steps...)
	for i := range snap.Steps {
		snap.Steps[i].ToolCalls = append([]runs.ToolCall(nil), r.Steps[i].ToolCalls...)
	}
	j.runs = append(j.runs, snap)
}

// threeCalls is a turn of two tool calls and an answer.
func threeCalls() []reply {
	return []reply{calls(call("c1", "echo", `{"n":1}`)), calls(call("c2", "echo", `{"n":2}`)), answer("done")}
}

// A turn stopped after each of its journal's entries goes on from there
// in another attempt: the conversation it sends next is the one the
// stopped attempt would have sent, no recorded answer or result is asked
// for again, the action in flight is done again and priced as the lost
// attempt's, and the answer is posted once, under the run's key.
func TestResumeFromEveryEntry(t *testing.T) {
	full := newHarness(t, threeCalls()...)
	full.withTools(&fakeTool{name: "echo"})
	j := &fakeJournal{}
	full.turn.Journal = j
	full.run(context.Background())
	wantEnd(t, full.r(), runs.StatusSucceeded, "")
	if len(j.entries) != 5 {
		t.Fatalf("journal of %d entries, want 5 (answer, result, answer, result, final)", len(j.entries))
	}

	cases := []struct {
		entries  int    // the journal as the stopped attempt left it
		inFlight string // what it was doing
		calls    int    // model calls the resumed attempt makes
		tools    int    // tool calls it makes
	}{
		{0, runs.InFlightModel, 3, 2},
		{1, runs.InFlightTool, 2, 2},
		{2, runs.InFlightModel, 2, 1},
		{3, runs.InFlightTool, 1, 1},
		{4, runs.InFlightModel, 1, 0},
		{5, runs.InFlightPost, 0, 0},
	}
	for _, c := range cases {
		t.Run(j.runAt(c.entries), func(t *testing.T) {
			script := threeCalls()
			h := newHarness(t, script[len(script)-c.calls:]...)
			echo := &fakeTool{name: "echo"}
			h.withTools(echo)
			run := j.durable(c.entries, h.turn.Run)
			run.Attempts = 2
			h.turn.Run = run
			h.turn.Resume = &Resume{Entries: j.entries[:c.entries], Lost: runs.LostAttempt{Attempt: 1}, Worked: 3 * time.Second}
			out := h.run(context.Background())
			wantEnd(t, h.r(), runs.StatusSucceeded, "")
			if out.Err != nil || h.r().FinalMessage != "done" {
				t.Fatalf("outcome %+v, final %q", out, h.r().FinalMessage)
			}
			if len(h.model.reqs) != c.calls || echo.calls != c.tools {
				t.Fatalf("%d model calls and %d tool calls, want %d and %d", len(h.model.reqs), echo.calls, c.calls, c.tools)
			}
			// The next request is the one the stopped attempt sent.
			if c.calls > 0 {
				want := full.model.reqs[3-c.calls].Messages
				if got := h.model.reqs[0].Messages; !reflect.DeepEqual(got, want) {
					t.Fatalf("resumed request:\n got %+v\nwant %+v", got, want)
				}
			}
			if len(h.poster.posts) != 1 || h.poster.posts[0].env.IdempotencyKey != "run_1/answer" {
				t.Fatalf("posts %+v", h.poster.posts)
			}
			r := h.r()
			if len(r.Steps) != 3 || len(r.LostAttempts) != 1 {
				t.Fatalf("%d steps, lost attempts %+v", len(r.Steps), r.LostAttempts)
			}
			lost := r.LostAttempts[0]
			if lost.InFlight != c.inFlight || !lost.Estimated || lost.Attempt != 1 || r.Cost.LostMicros != lost.CostMicros {
				t.Fatalf("lost attempt %+v, lost cost %d", lost, r.Cost.LostMicros)
			}
			var steps money.Micros
			for _, s := range r.Steps {
				steps += s.CostMicros
			}
			if r.CostMicros != steps+lost.CostMicros {
				t.Fatalf("cost %d, want the steps' %d and the lost attempt's %d", r.CostMicros, steps, lost.CostMicros)
			}
			if c.inFlight == runs.InFlightModel {
				// Never below what the provider can have billed: the
				// request the resumed attempt sent, at the output it was
				// allowed, priced as the provider would.
				billed, _ := h.pricer.WorstCase("", EstimateTokens(messageBytes(h.model.reqs[0].Messages)), DefaultMaxOutputTokens)
				if lost.CostMicros < billed || lost.CompletionTokens != DefaultMaxOutputTokens {
					t.Fatalf("lost call priced %d (%d prompt tokens), below the %d it may have cost", lost.CostMicros, lost.PromptTokens, billed)
				}
			} else if lost.CostMicros != 0 {
				t.Fatalf("a lost %s priced %d", c.inFlight, lost.CostMicros)
			}
		})
	}
}

// runAt names a resume point.
func (j *fakeJournal) runAt(n int) string {
	if n == 0 {
		return "nothing recorded"
	}
	e, _ := decodeEntry(j.entries[n-1])
	return "after " + e.Kind + " " + string(rune('0'+n))
}

// durable is the run as a write carrying the first n entries left it.
func (j *fakeJournal) durable(n int, fresh *runs.Run) *runs.Run {
	if n == 0 {
		return fresh
	}
	r := j.runs[n-1]
	return &r
}

// The time bound counts the earlier attempts' working time, not the wait
// between them: a turn that worked its whole bound before it was taken
// over calls nothing more (and its lost attempt had nothing in flight);
// one with a second left gets a call bounded by it.
func TestResumedTurnKeepsItsTimeBound(t *testing.T) {
	h := newHarness(t)
	h.turn.Resume = &Resume{Lost: runs.LostAttempt{Attempt: 1}, Worked: DefaultMaxWall}
	h.turn.Run.Attempts = 2
	h.run(context.Background())
	wantEnd(t, h.r(), runs.StatusFailed, runs.ErrTimeout)
	if len(h.model.reqs) != 0 || h.r().LostAttempts[0].InFlight != runs.InFlightNone {
		t.Fatalf("%d calls, lost %+v", len(h.model.reqs), h.r().LostAttempts)
	}

	h = newHarness(t, answer("in time"))
	h.turn.Resume = &Resume{Lost: runs.LostAttempt{Attempt: 1}, Worked: DefaultMaxWall - time.Second}
	h.turn.Run.Attempts = 2
	h.run(context.Background())
	wantEnd(t, h.r(), runs.StatusSucceeded, "")
	if left := h.model.deadlines[0]; left <= 0 || left > time.Second {
		t.Fatalf("the call had %v, want at most the second left", left)
	}
}

// The lost attempt's sandboxes are priced for their life beyond their
// recorded runs.
func TestLostSandboxTimeIsCharged(t *testing.T) {
	h := newHarness(t, answer("ok"))
	h.turn.Run.Attempts = 2
	h.turn.Resume = &Resume{Lost: runs.LostAttempt{Attempt: 1}, SandboxMillis: 1500}
	h.run(context.Background())
	lost := h.r().LostAttempts[0]
	model, _ := h.pricer.WorstCase("", lost.PromptTokens, lost.CompletionTokens)
	if lost.SandboxMillis != 1500 || lost.CostMicros != model+3000 {
		t.Fatalf("lost attempt %+v", lost)
	}
}

// A resumed attempt whose record cannot be written makes no call: the
// run is left for the next attempt.
func TestResumeThatCannotBeRecordedCallsNothing(t *testing.T) {
	h := newHarness(t)
	h.turn.Run.Attempts = 2
	h.turn.Resume = &Resume{Lost: runs.LostAttempt{Attempt: 1}}
	h.turn.Checkpoint = func(context.Context, *runs.Run) error { return context.DeadlineExceeded }
	out := h.run(context.Background())
	if !out.Leave || len(h.model.reqs) != 0 || h.r().Status != runs.StatusRunning {
		t.Fatalf("outcome %+v, %d model calls, status %s", out, len(h.model.reqs), h.r().Status)
	}
}

// A journal the loop did not write ends the turn rather than guess.
func TestUnreadableJournalEndsTheTurn(t *testing.T) {
	h := newHarness(t)
	h.turn.Run.Attempts = 2
	h.turn.Resume = &Resume{Entries: []string{`{"kind":"tool","callId":"nobody"}`}}
	out := h.run(context.Background())
	wantEnd(t, h.r(), runs.StatusFailed, runs.ErrUnknown)
	if !out.Infrastructure || len(h.model.reqs) != 0 {
		t.Fatalf("outcome %+v after %d calls", out, len(h.model.reqs))
	}
}

// An outward tool (one that acts on the pod) starts from a durable
// record and carries a key of the run, the step and the call.
func TestOutwardToolStartsFromADurableRecord(t *testing.T) {
	h := newHarness(t, calls(call("c1", "poster", `{}`)), answer("done"))
	poster := &effectTool{fakeTool: fakeTool{name: "poster"}}
	h.turn.Tools = outwardSet{poster}
	h.turn.Journal = &fakeJournal{}
	atCall := -1
	poster.fn = func(context.Context, json.RawMessage) tools.Result {
		atCall = len(h.checkpoints)
		return tools.Result{Output: "ok", Posted: true}
	}
	h.run(context.Background())
	if atCall != 1 || len(poster.envs) != 1 || poster.envs[0].IdempotencyKey != "run_1/0/c1" {
		t.Fatalf("checkpoints before the call %d, envs %+v", atCall, poster.envs)
	}
	// It posted: the final answer is not posted again.
	if len(h.poster.posts) != 0 {
		t.Fatalf("posts %+v", h.poster.posts)
	}
}

// effectTool is a fakeTool that acts outside the runtime.
type effectTool struct{ fakeTool }

func (*effectTool) Effectful() {}

// outwardSet offers one outward tool.
type outwardSet []*effectTool

func (s outwardSet) Specs() []llm.ToolSpec { return []llm.ToolSpec{s[0].Spec()} }
func (s outwardSet) Lookup(name string) (tools.Tool, bool) {
	if name == s[0].name {
		return s[0], true
	}
	return nil, false
}
