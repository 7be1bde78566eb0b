package app_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/commonly/runtime/shared/llm/llmtest"
	"github.com/commonly/runtime/shared/runs"
	"github.com/commonly/runtime/shared/sandbox"
	"github.com/commonly/runtime/shared/store"
	"github.com/commonly/runtime/shared/store/storetest"
)

// A stop asked from another device reaches the worker wherever the turn
// waits: mid-stream (the model's answer cut, priced from what arrived)
// and mid-code-run (the run cut, the sandbox killed). The run ends
// cancelled within about a second, charged what it spent and counted; the
// pod gets nothing.
func TestCancelMidStreamAndMidCodeRun(t *testing.T) {
	cases := []struct {
		name   string
		steps  []llmtest.Step
		tools  string
		holdAt int // the model call held mid-stream; -1: none
	}{
		{"mid-stream", []llmtest.Step{llmtest.Text("a long answer that never ends")}, `[]`, 0},
		{"mid-code-run", []llmtest.Step{
			llmtest.Calls(llmtest.Call("commonly_run_code", `{"language":"python","code":"import time\ntime.sleep(30)\nprint(1)"}`)),
			llmtest.Text("unreached"),
		}, `["commonly_run_code"]`, -1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			model := llmtest.NewServer(llmKey, c.steps...)
			reached := make(chan struct{})
			var once sync.Once
			hold := &holdingLLM{next: model, at: c.holdAt, reached: func() { once.Do(func() { close(reached) }) }}
			srv := httptest.NewServer(hold)
			t.Cleanup(srv.Close)
			s := newStackWith(t, map[string]string{"LLM_BASE_URL": srv.URL})
			s.install(t, `{"userId":"user-1","podId":"pod-1","agentName":"scout","tools":`+c.tools+`}`)

			done := make(chan runs.Run, 1)
			go func() { done <- s.turn(t, "go on") }()
			if c.holdAt < 0 {
				// The code run has started once its sandbox is recorded.
				go func() {
					for len(s.sandboxRecords(t)) == 0 {
						time.Sleep(20 * time.Millisecond)
					}
					time.Sleep(200 * time.Millisecond)
					once.Do(func() { close(reached) })
				}()
			}
			select {
			case <-reached:
			case <-time.After(20 * time.Second):
				t.Fatal("the turn never reached the point to cancel at")
			}
			runID := s.onlyRunID(t)
			asked := time.Now()
			run := s.cancelRequested(t, runID, done)
			took := time.Since(asked)
			if run.Status != runs.StatusCancelled || run.Refunded || run.PostedToPod || run.FinalMessage != "" {
				t.Fatalf("run %s refunded %v posted %v final %q", run.Status, run.Refunded, run.PostedToPod, run.FinalMessage)
			}
			if took > 3*time.Second {
				t.Errorf("the run stopped %v after the cancel", took)
			}
			if len(s.pod.Messages("pod-1")) != 0 {
				t.Error("the pod got a message")
			}
			if run.CostMicros <= 0 || run.CostMicros != run.Cost.Total() {
				t.Errorf("cost %d of parts %+v: what was spent must be charged", run.CostMicros, run.Cost)
			}
			switch c.name {
			case "mid-stream":
				// The cut call, priced from its prompt and what arrived.
				last := run.Steps[len(run.Steps)-1]
				if !last.Estimated || last.PromptTokens == 0 || last.CompletionTokens == 0 || last.CompletionTokens >= 2048 {
					t.Errorf("the cut call's step %+v", last)
				}
				if !hold.cut() {
					t.Error("the model's stream was not cut")
				}
			case "mid-code-run":
				tc := run.Steps[0].ToolCalls
				if len(tc) != 1 || tc[0].CodeRun == nil || tc[0].CodeRun.ExitKind != "timeout" {
					t.Errorf("the code run %+v", tc)
				}
				if recs := s.sandboxRecords(t); len(recs) != 1 || recs[0].Status != sandbox.StatusKilled {
					t.Errorf("sandboxes %+v", recs)
				}
			}
			if u := s.call(t, apiEvent("GET", "/v1/me/usage", "user-1", false, "", nil)); !strings.Contains(u.Body, `"turnsUsed":1`) {
				t.Errorf("usage %s: a cancelled turn counts", u.Body)
			}
		})
	}
}

// cancelRequested asks the owner's run runID to stop, which is answered
// 202 requested, and returns the run its turn (done) ends with.
func (s *stack) cancelRequested(t *testing.T, runID string, done <-chan runs.Run) runs.Run {
	t.Helper()
	r := s.call(t, apiEvent("POST", "/v1/runs/"+runID+"/cancel", "user-1", false, "", nil))
	var body map[string]string
	_ = json.Unmarshal([]byte(r.Body), &body)
	if r.StatusCode != 202 || body["cancel"] != "requested" {
		t.Fatalf("cancel: %d %s", r.StatusCode, r.Body)
	}
	select {
	case run := <-done:
		return run
	case <-time.After(10 * time.Second):
		t.Fatal("the run did not stop")
		return runs.Run{}
	}
}

// onlyRunID is the id of the one run in the table.
func (s *stack) onlyRunID(t *testing.T) string {
	t.Helper()
	for range 100 {
		if all := s.allRuns(t); len(all) == 1 {
			return all[0].RunID
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatal("no run")
	return ""
}

// holdingLLM passes requests to the scripted server; model call at (0
// the first) streams its first chunk and then holds until its client
// goes away.
type holdingLLM struct {
	next    http.Handler
	at      int
	reached func()

	mu     sync.Mutex
	n      int
	wasCut bool
}

func (h *holdingLLM) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h.mu.Lock()
	i := h.n
	h.n++
	h.mu.Unlock()
	if i != h.at {
		h.next.ServeHTTP(w, r)
		return
	}
	h.next.ServeHTTP(&firstChunkOnly{ResponseWriter: w, r: r, h: h}, r)
}

func (h *holdingLLM) cut() bool { h.mu.Lock(); defer h.mu.Unlock(); return h.wasCut }

// firstChunkOnly lets one flushed chunk through, then holds the stream
// until the client disconnects.
type firstChunkOnly struct {
	http.ResponseWriter
	r       *http.Request
	h       *holdingLLM
	flushes int
}

func (f *firstChunkOnly) Flush() {
	f.ResponseWriter.(http.Flusher).Flush()
	f.flushes++
	if f.flushes == 2 { // the keep-alive, then the first chunk
		f.h.reached()
		<-f.r.Context().Done()
		f.h.mu.Lock()
		f.h.wasCut = true
		f.h.mu.Unlock()
		panic(http.ErrAbortHandler)
	}
}

// Once the final answer is recorded (the events flush during its post
// carries it), a stop is too late: the post goes on, the run succeeds.
func TestCancelOnceTheAnswerIsRecordedIsTooLate(t *testing.T) {
	s := newStackWith(t, nil, llmtest.Text("the answer"))
	s.install(t, `{"userId":"user-1","podId":"pod-1","agentName":"scout","tools":[]}`)
	posting, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	s.pod.Hold(func(*http.Request) { once.Do(func() { close(posting) }); <-release })

	done := make(chan runs.Run, 1)
	go func() { done <- s.turn(t, "go on") }()
	select {
	case <-posting:
	case <-time.After(20 * time.Second):
		t.Fatal("the answer was never posted")
	}
	runID := s.onlyRunID(t)
	// The flush that records the answer falls during the post.
	st, err := store.New(store.Config{DB: s.db, Tables: s.cfg.Tables})
	if err != nil {
		t.Fatal(err)
	}
	storetest.AwaitJournal(t, st, runID, 1)
	r := s.call(t, apiEvent("POST", "/v1/runs/"+runID+"/cancel", "user-1", false, "", nil))
	close(release)
	var body map[string]string
	_ = json.Unmarshal([]byte(r.Body), &body)
	if r.StatusCode != 200 || body["cancel"] != "too_late" {
		t.Errorf("cancel during the post: %d %s", r.StatusCode, r.Body)
	}
	run := <-done
	if run.Status != runs.StatusSucceeded || !run.PostedToPod || run.FinalMessage != "the answer" {
		t.Fatalf("run %s posted %v final %q", run.Status, run.PostedToPod, run.FinalMessage)
	}
	if n := len(s.pod.Messages("pod-1")); n != 1 {
		t.Errorf("the pod got %d messages", n)
	}
}

// A Durable Object turn is stopped on our side: the forward to the older
// runtime is cut, its answer never posted, and the run ends cancelled.
func TestCancelADurableObjectTurn(t *testing.T) {
	const doToken = "do-runtime-token-cancel"
	forwarded, cut := make(chan struct{}), make(chan struct{})
	do := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.ReadAll(r.Body) // read whole, so that the server sees the client go
		close(forwarded)
		<-r.Context().Done() // the runtime is still working when the stop comes
		close(cut)
	}))
	t.Cleanup(do.Close)
	s := newStackWith(t, map[string]string{"DO_RUNTIME_URL": do.URL, "DO_RUNTIME_TOKEN": doToken})
	s.install(t, `{"userId":"user-1","podId":"pod-1","agentName":"scout","engine":"durable-object"}`)
	done := make(chan runs.Run, 1)
	go func() { done <- s.turn(t, "through the durable object") }()
	select {
	case <-forwarded:
	case <-time.After(20 * time.Second):
		t.Fatal("the turn never reached the durable object runtime")
	}
	run := s.cancelRequested(t, s.onlyRunID(t), done)
	if run.Status != runs.StatusCancelled || run.Engine != "durable-object" || run.PostedToPod || run.Refunded {
		t.Fatalf("run %s engine %s posted %v refunded %v", run.Status, run.Engine, run.PostedToPod, run.Refunded)
	}
	select {
	case <-cut:
	case <-time.After(5 * time.Second):
		t.Error("the forward to the runtime was not cut")
	}
	if len(s.pod.Messages("pod-1")) != 0 {
		t.Error("the pod got a message")
	}
}
