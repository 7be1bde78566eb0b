package load

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"strings"
	"sync"
	"syscall"
	"time"

	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/commonly/runtime/infra/localstack"
	"github.com/commonly/runtime/shared/dispatch"
	"github.com/commonly/runtime/shared/llm/llmtest"
	"github.com/commonly/runtime/shared/turns"
)

// A worker killed mid-turn (WorkerKilled), as a Lambda stopped by its
// timeout, out of memory or a lost execution environment: from the
// instant it dies nothing it does reaches the world. In process, each
// invocation the Lambda stand-in runs carries a kill switch in its
// context (kills.invoke); every outbound client of the turn function
// (its DynamoDB client, and the HTTP client of the model, E2B and the
// pods) goes through kills' wrapper, which holds any request of a dead
// invocation until the run ends: the dead worker's goroutines freeze at
// their next call, as a stopped process does, and nothing they would do
// next (a final write that fails, a result kept in the container's
// memory for a retry) happens. A request in flight when the switch trips
// has reached the server: it is applied and its answer is cut. The
// invocation fails at the kill, and the stand-in retries it after its
// delay, as Lambda retries an asynchronous invocation: the retry finds
// the dead worker's lease live and fails until it lapses, or the reaper
// re-dispatches the run first.
//
// The same wrapper cuts DynamoDB answers after they are applied
// (AnswersCut, and Config.CutAnswers on all the turn function's calls):
// the request reaches the table, the answer is dropped and the SDK sees
// a reset connection, which it retries; every conditional write must
// recognise its own earlier success.

// KillPoint is where in its turn a killed worker dies.
type KillPoint string

const (
	// KillModelCall: the model answered, the answer never arrived.
	KillModelCall KillPoint = "model-call"
	// KillMidStream: part of the model's streamed answer arrived.
	KillMidStream KillPoint = "mid-stream"
	// KillCodeRun: while the sandbox runs the turn's code.
	KillCodeRun KillPoint = "code-run"
	// KillBetweenSteps: after the first step's tool ran, before the
	// second model call is sent.
	KillBetweenSteps KillPoint = "between-steps"
	// KillAfterAnswer: the final answer arrived; the next DynamoDB write
	// is refused or applied with its answer cut.
	KillAfterAnswer KillPoint = "after-answer"
	// KillAnytime: a random instant within the turn's first second.
	KillAnytime KillPoint = "anytime"
)

var killPoints = []KillPoint{KillModelCall, KillMidStream, KillCodeRun, KillBetweenSteps, KillAfterAnswer, KillAnytime}

// errKilled is what a dead invocation's frozen calls return once the
// run ends, and what the invocation fails with.
var errKilled = errors.New("load: the worker was killed")

// answerCutShare is the share of an AnswersCut turn's DynamoDB calls
// whose first answer is cut.
const answerCutShare = 0.5

type invocationKey struct{}

// invocation is one run of the turn function's entry point by the Lambda
// stand-in, and its kill switch.
type invocation struct {
	runID   string
	started time.Time
	dead    chan struct{}

	mu sync.Mutex
	// fault is the turn's, learnt from its first model request (or from
	// an earlier invocation of the run); decided once it is.
	fault   Fault
	decided bool
	plan    *killPlan
	// models is the model requests sent; answered is set when the plan's
	// last call's answer was read whole (KillAfterAnswer).
	models   int
	answered bool
	finished bool
	killedAt time.Time
}

// killPlan is where one invocation dies.
type killPlan struct {
	point KillPoint
	// call is the model request the point is about (1 or 2); bytes how
	// much of a stream arrives (KillMidStream); apply whether the last
	// write reaches the table (KillAfterAnswer); after the delay
	// (KillAnytime).
	call  int
	bytes int
	apply bool
	after time.Duration
}

// kills injects the worker kills and the cut answers, and keeps what
// became of them.
type kills struct {
	cutRate float64
	release chan struct{} // closed when the run ends: frozen calls fail
	once    sync.Once

	mu    sync.Mutex
	rng   *rand.Rand
	runs  map[string]*killed // by run id
	fault map[string]Fault   // by run id, once an invocation learnt it
	cuts  map[string]int     // answers cut, by operation
}

// killed is a run whose worker was killed: where, when, and when the
// next attempt started and made its first model call.
type killed struct {
	point   KillPoint
	at      time.Time
	resumed time.Time // the start of the invocation that made nextModel
	next    time.Time // the next attempt's first model request
}

func newKills(cutRate float64, seed uint64) *kills {
	return &kills{
		cutRate: cutRate, release: make(chan struct{}),
		rng:  rand.New(rand.NewPCG(seed, seed^0x5bd1e995)),
		runs: map[string]*killed{}, fault: map[string]Fault{}, cuts: map[string]int{},
	}
}

// stop ends the freeze: the dead invocations' calls fail from now on.
func (k *kills) stop() { k.once.Do(func() { close(k.release) }) }

// invoke wraps the stand-in's Run: each invocation gets its switch, and
// fails at its kill whatever the dead worker's goroutines still do.
func (k *kills) invoke(run func(context.Context, []byte) error) func(context.Context, []byte) error {
	return func(ctx context.Context, payload []byte) error {
		var ev dispatch.Event
		_ = json.Unmarshal(payload, &ev)
		inv := &invocation{started: time.Now(), dead: make(chan struct{})}
		if ev.Dispatch != nil {
			inv.runID = ev.Dispatch.RunID
		}
		k.mu.Lock()
		if f, ok := k.fault[inv.runID]; ok {
			// A later attempt of a run: it is never killed again, its
			// answers are cut as the turn's fault says.
			inv.fault, inv.decided = f, true
		}
		k.mu.Unlock()
		done := make(chan error, 1)
		go func() {
			defer func() {
				if p := recover(); p != nil {
					done <- fmt.Errorf("invocation panicked: %v", p)
				}
			}()
			done <- run(context.WithValue(ctx, invocationKey{}, inv), payload)
		}()
		select {
		case err := <-done:
			inv.mu.Lock()
			inv.finished = true
			inv.mu.Unlock()
			return err
		case <-inv.dead:
			return fmt.Errorf("%w (%s)", errKilled, inv.plan.point)
		}
	}
}

// kill trips inv's switch, unless its invocation ended first.
func (k *kills) kill(inv *invocation) {
	inv.mu.Lock()
	if inv.finished || !inv.killedAt.IsZero() {
		inv.mu.Unlock()
		return
	}
	inv.killedAt = time.Now()
	inv.mu.Unlock()
	k.mu.Lock()
	k.runs[inv.runID] = &killed{point: inv.plan.point, at: inv.killedAt}
	k.mu.Unlock()
	close(inv.dead)
}

func (inv *invocation) isDead() bool {
	select {
	case <-inv.dead:
		return true
	default:
		return false
	}
}

// frozen is a dead invocation's call: it never returns while the run
// lasts, whatever its context says.
func (k *kills) frozen() (*http.Response, error) {
	<-k.release
	return nil, errKilled
}

type sendFunc func(*http.Request) (*http.Response, error)

// transport wraps the HTTP client of the model, E2B and the pods.
func (k *kills) transport(next http.RoundTripper) http.RoundTripper {
	return roundTripper(func(req *http.Request) (*http.Response, error) { return k.outbound(req, next.RoundTrip) })
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }

// doer is the SDK's HTTP client as an option sees it.
type doer interface {
	Do(*http.Request) (*http.Response, error)
}

type doFunc func(*http.Request) (*http.Response, error)

func (f doFunc) Do(req *http.Request) (*http.Response, error) { return f(req) }

// dynamo is the option that puts the wrapper on a DynamoDB client.
func (k *kills) dynamo(o *dynamodb.Options) {
	var next doer = o.HTTPClient
	if next == nil {
		next = awshttp.NewBuildableClient()
	}
	o.HTTPClient = doFunc(func(req *http.Request) (*http.Response, error) { return k.table(req, next.Do) })
}

// options are the options of fn's DynamoDB client: the turn function's
// goes through the wrapper.
func (k *kills) options(fn localstack.Function) []func(*dynamodb.Options) {
	if fn != localstack.Turn {
		return nil
	}
	return []func(*dynamodb.Options){k.dynamo}
}

// outbound is a call to the model, E2B or the pods.
func (k *kills) outbound(req *http.Request, send sendFunc) (*http.Response, error) {
	inv, _ := req.Context().Value(invocationKey{}).(*invocation)
	if inv == nil {
		return send(req)
	}
	if inv.isDead() {
		return k.frozen()
	}
	model := strings.HasSuffix(req.URL.Path, "/chat/completions")
	code := req.Method == http.MethodPost && req.URL.Path == "/execute"
	var call int
	if model {
		call = k.modelCall(inv, req)
		if p := inv.plan; p != nil && p.point == KillBetweenSteps && call == p.call {
			k.kill(inv)
			return k.frozen()
		}
	}
	resp, err := send(req)
	if inv.isDead() {
		if err == nil {
			_ = resp.Body.Close()
		}
		return k.frozen()
	}
	if err != nil {
		return resp, err
	}
	p := inv.plan
	switch {
	case p == nil:
		return resp, nil
	case model && p.point == KillModelCall && call == p.call, code && p.point == KillCodeRun:
		// The server has the request; its answer never arrives.
		k.kill(inv)
		_ = resp.Body.Close()
		return k.frozen()
	case model:
		resp.Body = &killBody{k: k, inv: inv, body: resp.Body, cutAt: cutAt(p, call), last: call == p.call && p.point == KillAfterAnswer}
	default:
		resp.Body = &killBody{k: k, inv: inv, body: resp.Body, cutAt: -1}
	}
	return resp, nil
}

func cutAt(p *killPlan, call int) int {
	if p.point == KillMidStream && call == p.call {
		return p.bytes
	}
	return -1
}

// modelCall counts a model request of inv, learns the turn's fault from
// the first and, for a WorkerKilled turn's first attempt, plans its
// death. It returns the request's number in the invocation.
func (k *kills) modelCall(inv *invocation, req *http.Request) int {
	inv.mu.Lock()
	inv.models++
	call := inv.models
	decided := inv.decided
	inv.mu.Unlock()
	k.mu.Lock()
	if kr := k.runs[inv.runID]; kr != nil && kr.next.IsZero() && !inv.started.Before(kr.at) {
		kr.resumed, kr.next = inv.started, time.Now()
	}
	k.mu.Unlock()
	if decided {
		return call
	}
	d := directiveOf(req)
	var plan *killPlan
	k.mu.Lock()
	_, seen := k.fault[inv.runID]
	k.fault[inv.runID] = d.Fault
	if d.Fault == WorkerKilled && !seen && inv.runID != "" {
		plan = k.plan(d)
	}
	k.mu.Unlock()
	inv.mu.Lock()
	inv.fault, inv.decided, inv.plan = d.Fault, true, plan
	inv.mu.Unlock()
	if plan != nil && plan.point == KillAnytime {
		time.AfterFunc(plan.after, func() { k.kill(inv) })
	}
	return call
}

// plan draws where a killed turn dies (k.mu held). Every turn makes two
// model calls (a tool call, then the answer); only a code turn runs code.
func (k *kills) plan(d directive) *killPlan {
	points := killPoints
	if d.Kind != Code {
		points = []KillPoint{KillModelCall, KillMidStream, KillBetweenSteps, KillAfterAnswer, KillAnytime}
	}
	p := &killPlan{point: points[k.rng.IntN(len(points))], call: 1 + k.rng.IntN(2)}
	switch p.point {
	case KillBetweenSteps:
		p.call = 2
	case KillAfterAnswer:
		p.call, p.apply = 2, k.rng.IntN(2) == 0
	case KillMidStream:
		p.bytes = 1 + k.rng.IntN(400)
	case KillAnytime:
		p.after = time.Duration(k.rng.Int64N(int64(time.Second)))
	}
	return p
}

// directiveOf reads the turn's directive from a model request's body,
// which stays whole for the request.
func directiveOf(req *http.Request) directive {
	var body io.ReadCloser
	var err error
	if req.GetBody != nil {
		body, err = req.GetBody()
	} else if req.Body != nil {
		// No way to read it twice: read it, and give the request a copy.
		var b []byte
		b, err = io.ReadAll(req.Body)
		req.Body = io.NopCloser(bytes.NewReader(b))
		body = io.NopCloser(bytes.NewReader(b))
	}
	if err != nil || body == nil {
		return directive{}
	}
	defer body.Close()
	var chat llmtest.ChatRequest
	if json.NewDecoder(body).Decode(&chat) != nil {
		return directive{}
	}
	d, _, _ := conversation(chat)
	return d
}

// killBody is an answer's body read by a live invocation: cut at cutAt
// bytes (KillMidStream), or, read whole, the plan's last answer
// (KillAfterAnswer); cut wherever the reader is if the switch trips.
type killBody struct {
	k     *kills
	inv   *invocation
	body  io.ReadCloser
	cutAt int // -1: never
	read  int
	last  bool
}

func (b *killBody) Read(p []byte) (int, error) {
	if b.cutAt >= 0 && b.read >= b.cutAt {
		b.k.kill(b.inv)
	}
	if b.inv.isDead() {
		_ = b.body.Close()
		_, err := b.k.frozen()
		return 0, err
	}
	if b.cutAt >= 0 && len(p) > b.cutAt-b.read {
		p = p[:max(b.cutAt-b.read, 1)]
	}
	n, err := b.body.Read(p)
	b.read += n
	if errors.Is(err, io.EOF) {
		b.done()
	}
	return n, err
}

// Close: the client read what it wanted of the answer (a stream's
// reader may stop at its last event, before EOF).
func (b *killBody) Close() error {
	b.done()
	return b.body.Close()
}

func (b *killBody) done() {
	if b.last {
		b.inv.mu.Lock()
		b.inv.answered = true
		b.inv.mu.Unlock()
	}
}

// table is a call of the turn function's DynamoDB client.
func (k *kills) table(req *http.Request, send sendFunc) (*http.Response, error) {
	inv, _ := req.Context().Value(invocationKey{}).(*invocation)
	cutShare := k.cutRate
	if inv != nil {
		if inv.isDead() {
			return k.frozen()
		}
		inv.mu.Lock()
		p, answered, fault := inv.plan, inv.answered, inv.fault
		inv.mu.Unlock()
		if p != nil && p.point == KillAfterAnswer && answered {
			if !p.apply {
				k.kill(inv)
				return k.frozen()
			}
			resp, err := send(req)
			k.kill(inv)
			if err == nil {
				_ = resp.Body.Close()
			}
			return k.frozen()
		}
		if fault == AnswersCut {
			cutShare = max(cutShare, answerCutShare)
		}
	}
	resp, err := send(req)
	if inv != nil && inv.isDead() {
		if err == nil {
			_ = resp.Body.Close()
		}
		return k.frozen()
	}
	if err != nil || cutShare <= 0 || !firstAttempt(req) {
		return resp, err
	}
	k.mu.Lock()
	cut := k.rng.Float64() < cutShare
	if cut {
		k.cuts[operation(req)]++
	}
	k.mu.Unlock()
	if !cut {
		return resp, nil
	}
	// Applied; the answer is lost on the way back.
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	return nil, &net.OpError{Op: "read", Net: "tcp", Err: syscall.ECONNRESET} // as a reset connection fails; the SDK retries it
}

// firstAttempt: the SDK's first attempt of a call (amz-sdk-request:
// attempt=1; max=3). Only first answers are cut, so that the SDK's
// retry of each call gets through.
func firstAttempt(req *http.Request) bool {
	return strings.HasPrefix(req.Header.Get("amz-sdk-request"), "attempt=1;")
}

func operation(req *http.Request) string {
	t := req.Header.Get("X-Amz-Target")
	return t[strings.LastIndex(t, ".")+1:]
}

// killedRuns is where each killed run's worker died, by run id.
func (k *kills) killedRuns() map[string]KillPoint {
	k.mu.Lock()
	defer k.mu.Unlock()
	out := make(map[string]KillPoint, len(k.runs))
	for id, kr := range k.runs {
		out[id] = kr.point
	}
	return out
}

// answersCut is the DynamoDB answers cut, by operation.
func (k *kills) answersCut() map[string]int {
	k.mu.Lock()
	defer k.mu.Unlock()
	out := make(map[string]int, len(k.cuts))
	for op, n := range k.cuts {
		out[op] = n
	}
	return out
}

// resumes is how long the killed runs took to come back: from the kill
// to the first model request of a later attempt (total), split into the
// wait for that attempt's invocation (Lambda's retry or the reaper's
// re-dispatch, after the lease lapsed) and its own work up to the call.
// noModel are the killed runs no later attempt asked the model anything
// (their answer was durable: the next attempt only posted and wrote it,
// or the run closed otherwise).
type resumes struct {
	waits, works, totals []time.Duration
	noModel              int
}

func (k *kills) resumes() resumes {
	k.mu.Lock()
	defer k.mu.Unlock()
	var r resumes
	for _, kr := range k.runs {
		if kr.next.IsZero() {
			r.noModel++
			continue
		}
		r.waits = append(r.waits, kr.resumed.Sub(kr.at))
		r.works = append(r.works, kr.next.Sub(kr.resumed))
		r.totals = append(r.totals, kr.next.Sub(kr.at))
	}
	for _, d := range [][]time.Duration{r.waits, r.works, r.totals} {
		sortDurations(d)
	}
	return r
}

// In AWS a killed worker's run waits for Lambda's first retry of the
// failed invocation (about a minute) or the reaper's re-dispatch (its
// sweep runs every minute and takes a run once its lease lapsed,
// LeaseDuration after the dead worker's last write), whichever is first.
const (
	awsFirstRetry = time.Minute
	awsSweepEvery = time.Minute
)

// awsWait is that wait, at best, at the median (the sweep's phase
// uniform against the kill) and at worst.
func awsWait() (best, median, worst time.Duration) {
	return min(awsFirstRetry, turns.LeaseDuration), min(awsFirstRetry, turns.LeaseDuration+awsSweepEvery/2), min(awsFirstRetry, turns.LeaseDuration+awsSweepEvery)
}
