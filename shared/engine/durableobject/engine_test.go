package durableobject_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/commonly/runtime/shared/engine/durableobject"
	"github.com/commonly/runtime/shared/engine/durableobject/dotest"
	"github.com/commonly/runtime/shared/llm"
	"github.com/commonly/runtime/shared/money"
	"github.com/commonly/runtime/shared/pricing"
	"github.com/commonly/runtime/shared/runs"
	"github.com/commonly/runtime/shared/turns"
)

const token = "do-secret-token"

type rig struct {
	rt     *dotest.Runtime
	srv    *httptest.Server
	engine *durableobject.Engine
	logs   *bytes.Buffer
	now    time.Time
}

func newRig(t *testing.T, mod func(*durableobject.Config)) *rig {
	t.Helper()
	r := &rig{rt: dotest.New(token), logs: &bytes.Buffer{}, now: time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)}
	r.srv = httptest.NewServer(r.rt)
	t.Cleanup(r.srv.Close)
	prices, err := pricing.Load("")
	if err != nil {
		t.Fatal(err)
	}
	cfg := durableobject.Config{
		BaseURL: r.srv.URL + "/", Token: token, Prices: prices, DefaultModel: "deepseek-v4-flash",
		Now: func() time.Time { return r.now }, Log: slog.New(slog.NewJSONHandler(r.logs, nil)),
	}
	if mod != nil {
		mod(&cfg)
	}
	if r.engine, err = durableobject.New(cfg); err != nil {
		t.Fatal(err)
	}
	return r
}

func newRun() *runs.Run {
	return &runs.Run{RunID: "run_1", UserID: "user-1", PodID: "pod-1", InstallID: "inst-1", AgentName: "helper",
		InstanceID: "inst do/1", Message: "hello", Trigger: "user", Status: runs.StatusRunning, Steps: []runs.Step{}}
}

func (r *rig) run(ctx context.Context) (*runs.Run, turns.EngineResult) {
	run := newRun()
	res := r.engine.Run(ctx, turns.EngineTurn{Install: &turns.Install{InstallID: "inst-1"}, Run: run})
	return run, res
}

func TestForwardsTheTurnAndPricesItsUsage(t *testing.T) {
	r := newRig(t, nil)
	run, res := r.run(context.Background())
	if res.Infrastructure || run.Status != runs.StatusSucceeded || run.FinalMessage != "answer from the durable object" || !run.PostedToPod {
		t.Fatalf("run %s %q posted %v, refund %v", run.Status, run.FinalMessage, run.PostedToPod, res.Infrastructure)
	}
	got := r.rt.Turns()
	if len(got) != 1 || got[0].Path != "/agents/helper/inst%20do%2F1/turns" || got[0].Authorization != "Bearer "+token {
		t.Fatalf("requests %+v", got)
	}
	want := map[string]string{"runId": "run_1", "userId": "user-1", "podId": "pod-1", "message": "hello", "trigger": "user"}
	for k, v := range want {
		if got[0].Fields[k] != v {
			t.Errorf("body %s = %q, want %q", k, got[0].Fields[k], v)
		}
	}
	if len(got[0].Fields) != len(want) {
		t.Errorf("body = %v: nothing else is sent", got[0].Fields)
	}
	if len(run.Steps) != 1 || run.Steps[0].Model != "deepseek-v4-flash" || run.Tokens.Prompt != 1200 || run.Tokens.CachedPrompt != 1024 ||
		run.Tokens.Completion != 80 || run.CostMicros <= 0 || run.CostMicros != run.Cost.ModelMicros || run.Cost.PriceVersion == "" {
		t.Errorf("accounting: steps %+v tokens %+v cost %d %+v", run.Steps, run.Tokens, run.CostMicros, run.Cost)
	}
}

func TestAnswerOverTheCap(t *testing.T) {
	r := newRig(t, nil)
	long := strings.Repeat("é", 40000)
	r.rt.Answer(dotest.Reply{FinalMessage: long})
	run, res := r.run(context.Background())
	if res.Infrastructure || run.Status != runs.StatusSucceeded {
		t.Fatalf("run: %s %q", run.Status, run.ErrorMessage)
	}
	if n := utf8.RuneCountInString(run.FinalMessage); n > 32000 || n < 31000 {
		t.Errorf("final message of %d characters, want it cut to 32,000", n)
	}
}

// fakePrices knows one model.
type fakePrices struct{ known string }

func (p fakePrices) ModelCostParts(model string, _ time.Time, u llm.Usage) (runs.Cost, error) {
	if model != p.known {
		return runs.Cost{}, errors.New("no price")
	}
	return runs.Cost{ModelMicros: money.Micros(u.PromptTokens + u.CompletionTokens), InputMicros: money.Micros(u.PromptTokens), OutputMicros: money.Micros(u.CompletionTokens)}, nil
}
func (fakePrices) Version() string { return "test-1" }

// A turn is never silently free: an unpriced model is priced as the
// default, and when that fails too the run fails as config.
func TestUnpricedModels(t *testing.T) {
	r := newRig(t, func(c *durableobject.Config) { c.Prices, c.DefaultModel = fakePrices{"default"}, "default" })
	run, _ := r.run(context.Background())
	if run.Status != runs.StatusSucceeded || run.CostMicros != 1280 || run.Steps[0].Model != "deepseek-v4-flash" {
		t.Fatalf("priced as the default: %s cost %d", run.Status, run.CostMicros)
	}
	if !strings.Contains(r.logs.String(), "priced as the default model") {
		t.Errorf("the substitution is not logged: %s", r.logs.String())
	}

	r = newRig(t, func(c *durableobject.Config) { c.Prices, c.DefaultModel = fakePrices{"none"}, "default" })
	run, res := r.run(context.Background())
	if run.Status != runs.StatusFailed || run.ErrorKind != runs.ErrConfig || res.Infrastructure {
		t.Fatalf("unpriceable: %s %s refund %v", run.Status, run.ErrorKind, res.Infrastructure)
	}
}

// The runtime refused or could not be reached: an infrastructure failure
// with nothing answered, refunded by the rule; fixed words on the run.
func TestFailuresEndTheRunAndRefundIt(t *testing.T) {
	cases := []struct {
		name   string
		answer func(w http.ResponseWriter, r *http.Request)
		closed bool
		msg    string
		status int // logged with the failure
	}{
		{"status 500", nil, false, "the durable object runtime refused the turn (status 500)", 500},
		{"unreachable", nil, true, "the durable object runtime could not be reached", 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := newRig(t, func(cfg *durableobject.Config) { cfg.Timeout = 50 * time.Millisecond })
			r.rt.Answer(dotest.Reply{Status: c.status})
			if c.closed {
				r.srv.Close()
			}
			run, res := r.run(context.Background())
			if run.Status != runs.StatusFailed || run.ErrorKind != runs.ErrFallback || run.ErrorMessage != c.msg || !res.Infrastructure || !run.RefundDue(res.Infrastructure) {
				t.Fatalf("run %s %s %q refund %v, want fallback_error %q, refunded", run.Status, run.ErrorKind, run.ErrorMessage, res.Infrastructure, c.msg)
			}
			if run.CompletedAt == nil || run.CostMicros != 0 {
				t.Errorf("completed %v, cost %d", run.CompletedAt, run.CostMicros)
			}
			logs := r.logs.String()
			if strings.Contains(run.ErrorMessage, "secret") || strings.Contains(logs, "secret stack trace") {
				t.Error("the runtime's body leaked")
			}
			if c.status != 0 && !strings.Contains(logs, `"status":500`) {
				t.Errorf("the status is not logged: %s", logs)
			}
			if c.closed && !strings.Contains(logs, `"cause"`) {
				t.Errorf("the transport cause is not logged: %s", logs)
			}
		})
	}
}

func TestCancelledTurnIsInterrupted(t *testing.T) {
	r := newRig(t, nil)
	ctx, cancel := context.WithCancel(context.Background())
	r.rt.Raw(func(_ http.ResponseWriter, req *http.Request) {
		cancel()
		<-req.Context().Done()
	})
	run, res := r.run(ctx)
	// Cancelled after the request was sent: the runtime may go on, so the
	// outcome is unknown, as for a model call the loop stopped waiting for.
	if run.Status != runs.StatusInterrupted || run.ErrorKind != runs.ErrInterrupted || res.Infrastructure ||
		len(run.Steps) != 1 || !run.Steps[0].Estimated || run.CostMicros <= 0 {
		t.Fatalf("run %s %s infrastructure %v steps %+v", run.Status, run.ErrorKind, res.Infrastructure, run.Steps)
	}
}

// TestPathSegmentsCannotClimb: an agent name or instance id of "." or
// ".." (an install stored before ids were checked) never reaches the
// runtime, whose bearer token would go with it to another path; any other
// id stays one escaped segment of /agents/{agentName}/{instanceId}/turns.
func TestPathSegmentsCannotClimb(t *testing.T) {
	for _, id := range []string{".", ".."} {
		for field, set := range map[string]func(*runs.Run){
			"agentName":  func(r *runs.Run) { r.AgentName = id },
			"instanceId": func(r *runs.Run) { r.InstanceID = id },
		} {
			r := newRig(t, nil)
			run := newRun()
			set(run)
			res := r.engine.Run(context.Background(), turns.EngineTurn{Run: run})
			if run.ErrorKind != runs.ErrFallback || !res.Infrastructure || len(r.rt.Turns()) != 0 {
				t.Errorf("%s %q: run %s %q, %d requests", field, id, run.ErrorKind, run.ErrorMessage, len(r.rt.Turns()))
			}
		}
	}
	r := newRig(t, nil)
	run := newRun()
	run.AgentName, run.InstanceID = "../../admin", "x/../..?q=1#f"
	r.engine.Run(context.Background(), turns.EngineTurn{Run: run})
	if want := "/agents/..%2F..%2Fadmin/x%2F..%2F..%3Fq=1%23f/turns"; len(r.rt.Turns()) != 1 || r.rt.Turns()[0].Path != want {
		t.Errorf("requests %+v, want one to %q", r.rt.Turns(), want)
	}
}

func TestNewChecksItsConfig(t *testing.T) {
	prices, err := pricing.Load("")
	if err != nil {
		t.Fatal(err)
	}
	good := durableobject.Config{BaseURL: "https://do.example", Token: "t", Prices: prices, DefaultModel: "deepseek-v4-flash"}
	if _, err := durableobject.New(good); err != nil {
		t.Fatal(err)
	}
	for name, mod := range map[string]func(*durableobject.Config){
		"URL":     func(c *durableobject.Config) { c.BaseURL = "ftp://do" },
		"token":   func(c *durableobject.Config) { c.Token = " " },
		"pricer":  func(c *durableobject.Config) { c.Prices = nil },
		"model":   func(c *durableobject.Config) { c.DefaultModel = "" },
		"timeout": func(c *durableobject.Config) { c.Timeout = -time.Second },
	} {
		cfg := good
		mod(&cfg)
		if _, err := durableobject.New(cfg); err == nil || !strings.Contains(err.Error(), name) {
			t.Errorf("bad %s: err = %v", name, err)
		}
	}
}
