package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/commonly/runtime/infra/awslocal/lambdalocal"
	"github.com/commonly/runtime/infra/awslocal/rie"
	"github.com/commonly/runtime/infra/awslocal/runtimeapi"
	"github.com/commonly/runtime/internal/dynamodblocal"
	"github.com/commonly/runtime/shared/broker/brokertest"
	"github.com/commonly/runtime/shared/ledger/ledgertest"
	"github.com/commonly/runtime/shared/llm/llmtest"
	"github.com/commonly/runtime/shared/money"
	"github.com/commonly/runtime/shared/runs"
	"github.com/commonly/runtime/shared/sandbox/e2b/e2btest"
	"github.com/commonly/runtime/shared/store"
	"github.com/commonly/runtime/shared/store/storetest"
	"github.com/commonly/runtime/shared/tablekeys"
	"github.com/commonly/runtime/shared/tools/pod/podtest"
	"github.com/commonly/runtime/shared/utcday"
)

// The turn survives its worker: the production bootstrap runs a code turn
// in a process of its own, which is killed with SIGKILL at each point of
// the turn; a second process, given the same dispatch as Lambda's retry
// would be, takes the run over once its lease has lapsed and finishes it.
// At every point: the run succeeds in its second attempt; every model
// call the journal recorded was made once (the one in flight at the kill
// twice); its cost is what the model and the sandbox billed for recorded
// calls plus the lost attempt's estimate, never below what the lost call
// can have been billed; the ledger counts it; one sandbox is alive at a
// time and none is left; the pod has one answer.
func TestTurnSurvivesItsWorkerKilledAtEveryPoint(t *testing.T) {
	bootstrap := os.Getenv("TURN_BOOTSTRAP")
	if bootstrap == "" {
		t.Skip("TURN_BOOTSTRAP is set by `make test`")
	}
	cases := []struct {
		name string
		// arm sets the kill point on the rig; it returns when the first
		// attempt has reached it.
		arm func(r *resumeRig) <-chan struct{}
		// inFlight is what the lost attempt was doing ("" any: the kill
		// races the worker's next write).
		inFlight string
		// recorded is how many journal entries the first attempt has
		// written when it is killed: past the events flush that carries
		// it, its model answer is durable and only the code run is lost.
		recorded int
		// unrecorded, when set, is the model call (1, 2) from whose request
		// on the journal's writes are held: its answer is never recorded.
		unrecorded int
	}{
		{name: "model call 1 in flight", arm: func(r *resumeRig) <-chan struct{} { return r.llm.holdBefore(0) }, inFlight: runs.InFlightModel},
		{name: "model call 1 mid-stream", arm: func(r *resumeRig) <-chan struct{} { return r.llm.holdMidStream(0) }, inFlight: runs.InFlightModel},
		{name: "after model call 1", arm: func(r *resumeRig) <-chan struct{} { return r.llm.after(0) }},
		{name: "the sandbox made, not yet recorded", arm: func(r *resumeRig) <-chan struct{} { return r.holdCreate() }},
		{name: "during the code run, its answer unrecorded", arm: func(r *resumeRig) <-chan struct{} { return r.holdCodeRun() }, inFlight: runs.InFlightModel, unrecorded: 1},
		// The journal: the answer with its call.
		{name: "during the code run", arm: func(r *resumeRig) <-chan struct{} { return r.holdCodeRun() }, inFlight: runs.InFlightTool, recorded: 1},
		{name: "model call 2 in flight", arm: func(r *resumeRig) <-chan struct{} { return r.llm.holdBefore(1) }, inFlight: runs.InFlightModel},
		{name: "model call 2 mid-stream", arm: func(r *resumeRig) <-chan struct{} { return r.llm.holdMidStream(1) }, inFlight: runs.InFlightModel},
		// The answer rides on the events flush or the final write: a post
		// longer than the flush has it durable, and a takeover posts it
		// again under its key; a worker killed before either asks again.
		{name: "during the pod post, its answer unrecorded", arm: func(r *resumeRig) <-chan struct{} { return r.holdPost() }, inFlight: runs.InFlightModel, unrecorded: 2},
		// The journal: the first answer, the code's result, the final answer.
		{name: "during the pod post", arm: func(r *resumeRig) <-chan struct{} { return r.holdPost() }, inFlight: runs.InFlightPost, recorded: 3},
		{name: "after the answer, before the final write", arm: func(r *resumeRig) <-chan struct{} { return r.db.holdFinal() }, inFlight: runs.InFlightModel},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := newResumeRig(t, bootstrap)
			dispatch := r.submit(t)
			if c.unrecorded > 0 {
				r.llm.on(c.unrecorded-1, func(w http.ResponseWriter, _ *http.Request, serve func(http.ResponseWriter)) {
					r.db.holdJournal()
					serve(w)
				})
			}
			reached := c.arm(r)
			first := r.attempt(t)
			call := first.env.Invoke(runtimeapi.Invocation{Payload: dispatch})
			select {
			case <-reached:
				if c.recorded > 0 {
					storetest.AwaitJournal(t, r.st, r.runID, c.recorded)
				}
			case <-call.Done():
				t.Fatalf("the first attempt ended before the kill point:\n%s", first.proc.Output())
			case <-time.After(20 * time.Second):
				t.Fatalf("the kill point was not reached:\n%s", first.proc.Output())
			}
			if err := first.proc.Kill(); err != nil {
				t.Fatal(err)
			}
			<-first.proc.Exited()
			r.releaseHolds()
			if out, _ := call.Wait(context.Background()); out.Kind != runtimeapi.KindExited {
				t.Fatalf("the killed attempt ended %s", out.Kind)
			}
			r.lapseLease(t)

			// Lambda's retry of the failed dispatch, in a new environment.
			second := r.attempt(t)
			out, err := second.env.InvokeWait(context.Background(), runtimeapi.Invocation{Payload: dispatch})
			if err != nil || out.Kind != runtimeapi.KindResponse {
				t.Fatalf("the retried dispatch: %+v %v\n%s", out, err, second.proc.Output())
			}
			r.check(t, c.inFlight)
		})
	}
}

// resumeRig is the stand-ins of one resumed turn.
type resumeRig struct {
	t         *testing.T
	bootstrap string
	tables    store.Tables
	dbServer  *dynamodblocal.Server
	db        *ddbProxy
	st        *store.Dynamo
	llm       *llmHooks
	e2b       *e2btest.Fake
	pod       *podtest.Server
	lam       *lambdalocal.Server
	vars      map[string]string
	counted   <-chan string
	runID     string

	mu          sync.Mutex
	holds       []chan struct{}
	codeHold    *holdFor
	createHold  *holdFor
	aliveAtRun2 int
	codeRuns    int
}

const (
	resumeLLMKey = "sk-litellm-resume-1"
	answerText   = "The answer is 42."
)

func newResumeRig(t *testing.T, bootstrap string) *resumeRig {
	ctx := context.Background()
	r := &resumeRig{t: t, bootstrap: bootstrap, tables: store.Tables{State: "resume-state", Runs: "resume-runs"}}
	var err error
	if r.dbServer, err = dynamodblocal.NewWithTables(ctx, dynamodblocal.Config{}, r.tables); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.dbServer.Close() })
	if r.st, err = store.New(store.Config{DB: r.dbServer.Client(), Tables: r.tables}); err != nil {
		t.Fatal(err)
	}
	r.counted = ledgertest.Feed(t, r.dbServer, r.tables.Runs, r.st, time.Now, runs.StatusSucceeded)
	r.db = newDDBProxy(t, r.dbServer.URL, r.tables.Runs, r)

	// The model answers by where the conversation is: a code run first,
	// then the answer.
	model := llmtest.NewServer(resumeLLMKey)
	model.Respond(func(req llmtest.ChatRequest) llmtest.Step {
		if toolResults(req) == 0 {
			return llmtest.Calls(llmtest.Call("commonly_run_code", `{"language":"python","code":"print(6*7)"}`))
		}
		return llmtest.Text(answerText)
	})
	r.llm = &llmHooks{next: model, rig: r}
	llmSrv := httptest.NewServer(r.llm)
	t.Cleanup(llmSrv.Close)

	r.e2b = e2btest.Start(t)
	r.e2b.OnExecute(func(id, lang, code string, w *e2btest.StreamWriter) {
		r.mu.Lock()
		r.codeRuns++
		n := r.codeRuns
		hold := r.codeHold
		r.mu.Unlock()
		if n > 1 {
			r.mu.Lock()
			r.aliveAtRun2 = r.e2b.Alive()
			r.mu.Unlock()
		}
		if hold != nil && n == 1 {
			close(hold.reached)
			<-hold.release
		}
		w.Stdout("42\n")
	})
	broker := brokertest.New(t)
	r.pod = podtest.New(t, broker.Accepts("commonly"))
	if r.lam, err = lambdalocal.StartTaking("TurnFunction"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.lam.Close() })
	r.vars = map[string]string{
		"STATE_TABLE": r.tables.State, "RUNS_TABLE": r.tables.Runs, "TURN_DISPATCH": "lambda",
		"AWS_LAMBDA_FUNCTION_NAME": "TurnFunction", lambdalocal.EndpointVar: r.lam.URL,
		"LLM_BASE_URL": llmSrv.URL, "LLM_API_KEY": resumeLLMKey, "LLM_MODEL": "deepseek-v4-flash",
		"STAGE": "dev", "SANDBOX": "e2b", "E2B_API_KEY": e2btest.DefaultAPIKey, "E2B_API_URL": r.e2bAPI(t), "E2B_SANDBOX_URL": r.e2b.URL,
		"BROKER_URL": broker.URL, "BROKER_TOKEN": broker.ServiceToken, "COMMONLY_API_URL": r.pod.URL,
	}
	for k, v := range dynamodblocal.AWSEnv(r.db.URL) {
		r.vars[k] = v
	}
	return r
}

// holdFor is a kill point: reached is closed there, and the stand-in
// waits on release.
type holdFor struct{ reached, release chan struct{} }

func (r *resumeRig) newHold() *holdFor {
	h := &holdFor{reached: make(chan struct{}), release: make(chan struct{})}
	r.mu.Lock()
	r.holds = append(r.holds, h.release)
	r.mu.Unlock()
	return h
}

// releaseHolds lets every held stand-in go on (its caller is dead).
func (r *resumeRig) releaseHolds() {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, h := range r.holds {
		close(h)
	}
	r.holds = nil
	r.codeHold, r.createHold = nil, nil
}

// attempt is one execution environment with its runtime.
type attempt struct {
	env  *runtimeapi.Server
	proc *runtimeapi.Runtime
}

func (r *resumeRig) attempt(t *testing.T) attempt {
	t.Helper()
	env, err := runtimeapi.Start(runtimeapi.Config{FunctionName: "TurnFunction", Timeout: 3 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Close() })
	proc, err := env.StartRuntime(r.bootstrap, rie.Env(t.TempDir(), r.vars), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = proc.Close()
		if t.Failed() {
			t.Logf("runtime %d:\n%s", proc.Pid, proc.Output())
		}
	})
	return attempt{env: env, proc: proc}
}

// submit creates a code install and admits a turn through the API (in a
// runtime of its own), and returns the dispatch the API queued.
func (r *resumeRig) submit(t *testing.T) []byte {
	t.Helper()
	api := r.attempt(t)
	event := func(name, body string) []byte {
		raw, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			t.Fatal(err)
		}
		var ev map[string]any
		if err := json.Unmarshal(raw, &ev); err != nil {
			t.Fatal(err)
		}
		if body != "" {
			ev["body"] = body
		}
		out, _ := json.Marshal(ev)
		return out
	}
	status := func(out *runtimeapi.Outcome) (int, map[string]any) {
		var resp struct {
			StatusCode int    `json:"statusCode"`
			Body       string `json:"body"`
		}
		_ = json.Unmarshal(out.Body, &resp)
		var body map[string]any
		_ = json.Unmarshal([]byte(resp.Body), &body)
		return resp.StatusCode, body
	}
	ctx := context.Background()
	out, err := api.env.InvokeWait(ctx, runtimeapi.Invocation{Payload: event("put-install.json",
		`{"userId":"user-1","podId":"pod-1","agentName":"helper","instanceId":"inst-1-a","tools":["commonly_run_code"]}`)})
	if code, body := status(out); err != nil || code != 201 {
		t.Fatalf("put install: %d %v %v", code, body, err)
	}
	out, err = api.env.InvokeWait(ctx, runtimeapi.Invocation{Payload: event("submit-turn.json", "")})
	code, body := status(out)
	if err != nil || code != 202 {
		t.Fatalf("submit: %d %v %v", code, body, err)
	}
	r.runID, _ = body["runId"].(string)
	queued := r.lam.Take()
	if len(queued) != 1 {
		t.Fatalf("%d dispatches queued", len(queued))
	}
	_ = api.proc.Close()
	return queued[0].Payload
}

// lapseLease moves the killed attempt's lease into the past, as the clock
// would after LeaseDuration: the run is left running, held by nobody.
func (r *resumeRig) lapseLease(t *testing.T) {
	t.Helper()
	_, err := r.dbServer.Client().UpdateItem(context.Background(), &dynamodb.UpdateItemInput{
		TableName: aws.String(r.tables.Runs), Key: map[string]types.AttributeValue{tablekeys.RunID: &types.AttributeValueMemberS{Value: r.runID}},
		UpdateExpression:          aws.String("SET leaseUntilMs = :past"),
		ConditionExpression:       aws.String("#s = :running"),
		ExpressionAttributeNames:  map[string]string{"#s": "status"},
		ExpressionAttributeValues: map[string]types.AttributeValue{":past": &types.AttributeValueMemberN{Value: strconv.FormatInt(time.Now().Add(-time.Second).UnixMilli(), 10)}, ":running": &types.AttributeValueMemberS{Value: "running"}},
	})
	if err != nil {
		t.Fatalf("lapse the lease: %v", err)
	}
}

// holdCreate stops the first sandbox's creation once E2B made it, before
// the worker hears of it (and so before it is recorded).
func (r *resumeRig) holdCreate() <-chan struct{} {
	h := r.newHold()
	r.mu.Lock()
	r.createHold = h
	r.mu.Unlock()
	return h.reached
}

// e2bAPI stands in front of the fake E2B's API, for holdCreate.
func (r *resumeRig) e2bAPI(t *testing.T) string {
	target, err := url.Parse(r.e2b.URL)
	if err != nil {
		t.Fatal(err)
	}
	proxy := httputil.NewSingleHostReverseProxy(target)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		r.mu.Lock()
		hold := r.createHold
		if req.Method == http.MethodPost && req.URL.Path == "/sandboxes" {
			r.createHold = nil
		} else {
			hold = nil
		}
		r.mu.Unlock()
		if hold == nil {
			proxy.ServeHTTP(w, req)
			return
		}
		made := httptest.NewRecorder()
		proxy.ServeHTTP(made, req)
		close(hold.reached)
		<-hold.release
		maps.Copy(w.Header(), made.Header())
		w.WriteHeader(made.Code)
		_, _ = w.Write(made.Body.Bytes())
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// holdCodeRun stops the first code run in the sandbox.
func (r *resumeRig) holdCodeRun() <-chan struct{} {
	h := r.newHold()
	r.mu.Lock()
	r.codeHold = h
	r.mu.Unlock()
	return h.reached
}

// holdPost stops the backend after the first post acted, before it
// answers.
func (r *resumeRig) holdPost() <-chan struct{} {
	h := r.newHold()
	var once sync.Once
	r.pod.Hold(func(*http.Request) {
		first := false
		once.Do(func() { first = true })
		if first {
			close(h.reached)
			<-h.release
		}
	})
	return h.reached
}

// check holds the invariants once the turn is done.
func (r *resumeRig) check(t *testing.T, inFlight string) {
	t.Helper()
	ctx := context.Background()
	run, err := r.st.GetRun(ctx, r.runID)
	if err != nil {
		t.Fatal(err)
	}
	if run.Status != runs.StatusSucceeded || run.Attempts != 2 || len(run.LostAttempts) != 1 || run.FinalMessage != answerText || !run.PostedToPod {
		t.Fatalf("run %s, %d attempts, lost %+v, final %q, posted %v", run.Status, run.Attempts, run.LostAttempts, run.FinalMessage, run.PostedToPod)
	}
	lost := run.LostAttempts[0]
	if inFlight != "" && lost.InFlight != inFlight {
		t.Errorf("the lost attempt was in %s, want %s", lost.InFlight, inFlight)
	}
	if len(run.Steps) != 2 {
		t.Fatalf("%d recorded model calls, want 2", len(run.Steps))
	}
	// Every recorded model call made once; the lost one's in-flight call
	// (or its answer lost inside the flush window) once more.
	reqs := r.llm.byStage()
	extra := 0
	for stage := range 2 {
		switch n := reqs[stage]; {
		case n == 2:
			extra++
		case n != 1:
			t.Errorf("model call %d made %d times", stage+1, n)
		}
	}
	if want := map[bool]int{true: 1, false: 0}[lost.InFlight == runs.InFlightModel]; extra != want {
		t.Errorf("%d repeated model calls with the lost attempt in %s", extra, lost.InFlight)
	}
	// The cost: the recorded calls, the sandbox's time, the lost estimate.
	var steps money.Micros
	for _, s := range run.Steps {
		steps += s.CostMicros
	}
	if run.CostMicros != steps+run.Cost.SandboxMicros+run.Cost.SearchMicros+lost.CostMicros || run.Cost.LostMicros != lost.CostMicros {
		t.Errorf("cost %d: steps %d, sandbox %d, lost %d", run.CostMicros, steps, run.Cost.SandboxMicros, lost.CostMicros)
	}
	if lost.InFlight == runs.InFlightModel {
		// What the provider bills a call: its usage (the scripted
		// server's) for a prompt the estimate must not undercount.
		if lost.PromptTokens < llmtest.DefaultUsage.Prompt || lost.CompletionTokens < llmtest.DefaultUsage.Completion || lost.CostMicros <= 0 {
			t.Errorf("the lost call estimated at %+v, below what it can have been billed", lost)
		}
	}
	// The ledger counted the run's whole cost.
	ledgertest.Wait(t, r.counted, r.runID)
	if u, err := r.st.Usage(ctx, "user-1", utcday.Of(run.CreatedAt)); err != nil || u.CostMicros != int64(run.CostMicros) {
		t.Errorf("the ledger's day: %+v %v, run cost %d", u, err, run.CostMicros)
	}
	// One sandbox at a time, none left.
	r.mu.Lock()
	alive := r.aliveAtRun2
	r.mu.Unlock()
	if alive > 1 || r.e2b.Alive() != 0 {
		t.Errorf("%d sandboxes alive during the resumed code run, %d left", alive, r.e2b.Alive())
	}
	// One answer in the pod, whatever was posted twice.
	if msgs := r.pod.Messages("pod-1"); len(msgs) != 1 || msgs[0].Content != answerText {
		t.Errorf("the pod holds %+v", msgs)
	}
	// The stream goes on: increasing ids, the takeover said.
	var resumed bool
	for i, e := range run.Events {
		if e.ID != int64(i+1) {
			t.Fatalf("event %d has id %d", i, e.ID)
		}
		resumed = resumed || e.Type == runs.EventRunResumed
	}
	if !resumed {
		t.Error("no run.resumed event")
	}
}

// toolResults is how many tool results a request's conversation holds:
// the model call it is (0 the first).
func toolResults(req llmtest.ChatRequest) int {
	n := 0
	for _, m := range req.Messages {
		if m.Role == "tool" {
			n++
		}
	}
	return n
}

// llmHooks stands in front of the scripted LiteLLM: it counts requests by
// the model call they are and stops one where a test kills its caller.
type llmHooks struct {
	next http.Handler
	rig  *resumeRig

	mu     sync.Mutex
	stages map[int]int
	hooks  map[int]func(w http.ResponseWriter, r *http.Request, serve func(http.ResponseWriter))
}

func (h *llmHooks) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	var req llmtest.ChatRequest
	_ = json.Unmarshal(body, &req)
	stage := toolResults(req)
	h.mu.Lock()
	if h.stages == nil {
		h.stages = map[int]int{}
	}
	h.stages[stage]++
	hook := h.hooks[stage]
	delete(h.hooks, stage)
	h.mu.Unlock()
	serve := func(w http.ResponseWriter) {
		r.Body = io.NopCloser(bytes.NewReader(body))
		h.next.ServeHTTP(w, r)
	}
	if hook != nil {
		hook(w, r, serve)
		return
	}
	serve(w)
}

func (h *llmHooks) on(stage int, fn func(w http.ResponseWriter, r *http.Request, serve func(http.ResponseWriter))) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.hooks == nil {
		h.hooks = map[int]func(http.ResponseWriter, *http.Request, func(http.ResponseWriter)){}
	}
	h.hooks[stage] = fn
}

func (h *llmHooks) byStage() map[int]int {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := map[int]int{}
	for k, v := range h.stages {
		out[k] = v
	}
	return out
}

// holdBefore stops model call stage before it answers (the call in flight).
func (h *llmHooks) holdBefore(stage int) <-chan struct{} {
	hold := h.rig.newHold()
	h.on(stage, func(w http.ResponseWriter, r *http.Request, serve func(http.ResponseWriter)) {
		close(hold.reached)
		<-hold.release
	})
	return hold.reached
}

// holdMidStream lets model call stage send its first chunks, then stops.
func (h *llmHooks) holdMidStream(stage int) <-chan struct{} {
	hold := h.rig.newHold()
	h.on(stage, func(w http.ResponseWriter, r *http.Request, serve func(http.ResponseWriter)) {
		serve(&cutAfterFlushes{ResponseWriter: w, flushes: 2, hold: hold})
	})
	return hold.reached
}

// after lets model call stage answer whole, then says so at once (the kill
// races the worker's next write).
func (h *llmHooks) after(stage int) <-chan struct{} {
	hold := h.rig.newHold()
	h.on(stage, func(w http.ResponseWriter, r *http.Request, serve func(http.ResponseWriter)) {
		serve(w)
		if f, ok := w.(http.Flusher); ok {
			f.Flush()
		}
		close(hold.reached)
	})
	return hold.reached
}

// cutAfterFlushes passes a streamed answer on until its flushes-th flush,
// then holds it: the client has part of the answer.
type cutAfterFlushes struct {
	http.ResponseWriter
	flushes int
	hold    *holdFor
	held    bool
}

func (c *cutAfterFlushes) Write(b []byte) (int, error) {
	if c.held {
		<-c.hold.release
		return 0, http.ErrAbortHandler
	}
	return c.ResponseWriter.Write(b)
}

func (c *cutAfterFlushes) Flush() {
	if c.held {
		return
	}
	if f, ok := c.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
	if c.flushes--; c.flushes == 0 {
		c.held = true
		close(c.hold.reached)
	}
}

// ddbProxy stands in front of the embedded DynamoDB: it can stop the
// run's final write before it reaches the table.
type ddbProxy struct {
	URL     string
	table   string
	rig     *resumeRig
	mu      sync.Mutex
	final   *holdFor
	journal *holdFor
}

func newDDBProxy(t *testing.T, target, table string, r *resumeRig) *ddbProxy {
	u, _ := url.Parse(target)
	p := &ddbProxy{table: table, rig: r}
	rp := httputil.NewSingleHostReverseProxy(u)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		req.Body = io.NopCloser(bytes.NewReader(body))
		p.mu.Lock()
		hold := p.final
		isFinal := hold != nil && strings.Contains(body2(body), `"status":{"S":"succeeded"}`) && strings.Contains(body2(body), `"`+table+`"`)
		if isFinal {
			p.final = nil
		}
		journal := p.journal
		p.mu.Unlock()
		// The rig has one run: any journal item is its.
		if journal != nil && strings.Contains(string(body), tablekeys.JournalPartition("")) {
			select {
			case <-journal.release: // the attempt it held is dead: the next one's writes go through
			default:
				<-journal.release
				http.Error(w, "gone", http.StatusServiceUnavailable)
				return
			}
		}
		if isFinal {
			close(hold.reached)
			<-hold.release
			http.Error(w, "gone", http.StatusServiceUnavailable)
			return
		}
		rp.ServeHTTP(w, req)
	}))
	t.Cleanup(srv.Close)
	p.URL = srv.URL
	return p
}

func body2(b []byte) string { return strings.ReplaceAll(string(b), " ", "") }

// holdJournal stops every write of the run's journal before the table
// sees it, until the holds are released: the attempt's answers are never
// recorded.
func (p *ddbProxy) holdJournal() {
	h := p.rig.newHold()
	p.mu.Lock()
	p.journal = h
	p.mu.Unlock()
}

// holdFinal stops the run's final write (its succeeded run) before the
// table sees it.
func (p *ddbProxy) holdFinal() <-chan struct{} {
	h := p.rig.newHold()
	p.mu.Lock()
	p.final = h
	p.mu.Unlock()
	return h.reached
}
