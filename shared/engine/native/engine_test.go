package native_test

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/commonly/runtime/shared/agent"
	"github.com/commonly/runtime/shared/engine/native"
	"github.com/commonly/runtime/shared/llm"
	"github.com/commonly/runtime/shared/pricing"
	"github.com/commonly/runtime/shared/runs"
	"github.com/commonly/runtime/shared/sandbox"
	"github.com/commonly/runtime/shared/tools"
	"github.com/commonly/runtime/shared/tools/runcode"
	"github.com/commonly/runtime/shared/turns"
)

// clock is the turn's time: model calls and code runs advance it.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// step is one scripted model answer, or what the model does instead.
type step func(ctx context.Context) (*llm.Response, error)

func runCode() step {
	return func(context.Context) (*llm.Response, error) {
		return &llm.Response{Message: llm.Message{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{
			{ID: "c1", Name: runcode.Name, Arguments: `{"language":"python","code":"print(1)"}`},
		}}, Usage: llm.Usage{PromptTokens: 100, CompletionTokens: 10}}, nil
	}
}

func say(text string) step {
	return func(context.Context) (*llm.Response, error) {
		return &llm.Response{Message: llm.Message{Role: llm.RoleAssistant, Content: text}, Usage: llm.Usage{PromptTokens: 120, CompletionTokens: 5}}, nil
	}
}

// model plays its steps in order; each call takes 3 s of the clock.
type model struct {
	clock *clock
	steps []step
	reqs  []llm.Request
}

func (m *model) Complete(ctx context.Context, req llm.Request) (*llm.Response, error) {
	m.reqs = append(m.reqs, req)
	m.clock.Advance(3 * time.Second)
	if len(m.reqs) > len(m.steps) {
		return nil, errors.New("unscripted call")
	}
	return m.steps[len(m.reqs)-1](ctx)
}

// provider is a sandbox provider priced like E2B whose runs take 2 s.
type provider struct {
	clock   *clock
	created int
	killed  []string
}

func (p *provider) Name() string { return "e2b" }
func (p *provider) Create(context.Context, sandbox.Meta) (sandbox.Session, error) {
	p.created++
	return session{p}, nil
}

func (p *provider) RunSandboxes(context.Context, string) ([]sandbox.Listed, error) { return nil, nil }

func (p *provider) KillSandbox(_ context.Context, id string) (bool, error) {
	p.killed = append(p.killed, id)
	return true, nil
}

type session struct{ p *provider }

func (s session) ID() string { return "sbx-1" }
func (s session) Execute(context.Context, sandbox.Language, string) (sandbox.Execution, error) {
	s.p.clock.Advance(2 * time.Second)
	return sandbox.Execution{Stdout: "1\n"}, nil
}
func (s session) Kill(ctx context.Context) error {
	if ctx.Err() != nil {
		return ctx.Err() // a kill with the turn's cancelled context would fail
	}
	s.p.killed = append(s.p.killed, s.ID())
	return nil
}

type ledger struct{ created, killed []string }

func (l *ledger) SandboxCreated(_ context.Context, rec sandbox.Record) error {
	l.created = append(l.created, rec.SandboxID)
	return nil
}
func (l *ledger) SandboxKilled(_ context.Context, id string, _ time.Time) error {
	l.killed = append(l.killed, id)
	return nil
}

type poster struct{ posts []string }

func (p *poster) Post(_ context.Context, _ tools.Env, content string) error {
	p.posts = append(p.posts, content)
	return nil
}

// tool is a built-in or connector tool that answers ok.
type tool struct{ name string }

func (t tool) Spec() llm.ToolSpec {
	return llm.ToolSpec{Name: t.name, Description: "test", Parameters: map[string]any{"type": "object"}}
}
func (t tool) Call(context.Context, tools.Env, json.RawMessage) tools.Result {
	return tools.Result{Output: map[string]any{}}
}

type checker struct{ err error }

func (c checker) ConnectionActive(context.Context, string, string) (bool, error) {
	return c.err == nil, c.err
}

type rig struct {
	clock    *clock
	model    *model
	provider *provider
	ledger   *ledger
	poster   *poster
	prices   *pricing.Table
	engine   *native.Engine
}

func newRig(t *testing.T, mod func(*native.Config), steps ...step) *rig {
	t.Helper()
	r := &rig{clock: &clock{t: time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)}, ledger: &ledger{}, poster: &poster{}}
	r.model = &model{clock: r.clock, steps: steps}
	r.provider = &provider{clock: r.clock}
	var err error
	if r.prices, err = pricing.Load(""); err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.DiscardHandler)
	loop, err := agent.New(agent.Config{Model: r.model, Pricer: r.prices, Poster: r.poster, ModelName: "deepseek-v4-flash",
		SandboxProvider: r.provider.Name(), Now: r.clock.Now, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	code, err := runcode.NewFactory(runcode.Config{Provider: r.provider, Ledger: r.ledger, Now: r.clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	cfg := native.Config{Loop: loop, Code: code, Prices: r.prices, Now: r.clock.Now, Log: log}
	if mod != nil {
		mod(&cfg)
	}
	if r.engine, err = native.New(cfg); err != nil {
		t.Fatal(err)
	}
	return r
}

func (r *rig) run(ctx context.Context, in *turns.Install) (*runs.Run, turns.EngineResult) {
	start := r.clock.Now()
	run := &runs.Run{RunID: "run_1", UserID: "user-1", InstallID: in.InstallID, PodID: "pod-1", AgentName: in.AgentName,
		Message: "what is 1?", Status: runs.StatusRunning, CreatedAt: start, StartedAt: &start, Steps: []runs.Step{}}
	return run, r.engine.Run(ctx, turns.EngineTurn{Install: in, Run: run})
}

func install() *turns.Install {
	return &turns.Install{InstallID: "inst-1", UserID: "user-1", AgentName: "helper"}
}

// codeInstall is an install that opted in to code execution.
func codeInstall() *turns.Install {
	in := install()
	in.Tools = &[]string{runcode.Name}
	return in
}

// The sandbox a turn created is killed (and recorded killed) on every
// path out of the turn, with a context of its own.
func TestSandboxKilledOnEveryPath(t *testing.T) {
	cases := []struct {
		name   string
		after  func(cancel context.CancelFunc) step
		status runs.Status
		kind   runs.ErrorKind
	}{
		{"answer", func(context.CancelFunc) step { return say("one") }, runs.StatusSucceeded, ""},
		{"model error", func(context.CancelFunc) step {
			return func(context.Context) (*llm.Response, error) {
				return nil, &llm.CallError{Kind: llm.ErrCall, Status: 500, Message: "upstream", Billed: true}
			}
		}, runs.StatusFailed, runs.ErrLLM},
		{"panic", func(context.CancelFunc) step {
			return func(context.Context) (*llm.Response, error) { panic("model bug") }
		}, runs.StatusFailed, runs.ErrUnknown},
		{"cancelled", func(cancel context.CancelFunc) step {
			return func(ctx context.Context) (*llm.Response, error) { cancel(); return nil, ctx.Err() }
		}, runs.StatusInterrupted, runs.ErrInterrupted},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			r := newRig(t, nil, runCode(), c.after(cancel))
			run, _ := r.run(ctx, codeInstall())
			if run.Status != c.status || run.ErrorKind != c.kind {
				t.Fatalf("run %s %s %q, want %s %s", run.Status, run.ErrorKind, run.ErrorMessage, c.status, c.kind)
			}
			if r.provider.created != 1 || len(r.provider.killed) != 1 || len(r.ledger.killed) != 1 {
				t.Errorf("created %d, killed %v, recorded killed %v", r.provider.created, r.provider.killed, r.ledger.killed)
			}
		})
	}
}

// Providers bill a sandbox from create to kill: the time between its
// runs and before the kill is charged to the turn beside the runs.
func TestIdleSandboxTimeIsCharged(t *testing.T) {
	r := newRig(t, nil, runCode(), say("one"))
	run, res := r.run(context.Background(), codeInstall())
	if run.Status != runs.StatusSucceeded || res.Infrastructure {
		t.Fatalf("run %s %q", run.Status, run.ErrorMessage)
	}
	// Created after the first call (3 s), ran 2 s, killed after the second
	// call (3 s more): 2 s of runs and 3 s idle.
	ran, _ := r.prices.SandboxCost("e2b", 2000)
	idle, _ := r.prices.SandboxCost("e2b", 3000)
	if idle <= 0 || run.Cost.SandboxMicros != ran+idle || run.CostMicros != run.Cost.Total() {
		t.Errorf("sandbox cost %d, want %d for the run and %d idle", run.Cost.SandboxMicros, ran, idle)
	}

	r = newRig(t, nil, say("no code"))
	run, _ = r.run(context.Background(), codeInstall())
	if r.provider.created != 0 || len(r.provider.killed) != 0 || run.Cost.SandboxMicros != 0 {
		t.Errorf("a turn without code: created %d, killed %v, sandbox cost %d", r.provider.created, r.provider.killed, run.Cost.SandboxMicros)
	}
}

func TestPromptAndModelOfTheInstall(t *testing.T) {
	r := newRig(t, nil, say("hi"))
	r.run(context.Background(), install())
	if sys := r.model.reqs[0].Messages[0]; sys.Role != llm.RoleSystem || sys.Content != native.DefaultSystemPrompt("helper") ||
		!strings.Contains(sys.Content, "helper") || r.model.reqs[0].Model != "deepseek-v4-flash" {
		t.Errorf("default: system %+v, model %q", sys, r.model.reqs[0].Model)
	}

	r = newRig(t, nil, say("hi"))
	in := install()
	in.SystemPrompt, in.Model = "You are terse.", "deepseek-v4-pro"
	run, _ := r.run(context.Background(), in)
	if sys := r.model.reqs[0].Messages[0]; sys.Content != "You are terse." || r.model.reqs[0].Model != "deepseek-v4-pro" || run.Steps[0].CostMicros <= 0 {
		t.Errorf("install's: system %+v, model %q, steps %+v", sys, r.model.reqs[0].Model, run.Steps)
	}
}

func TestToolsOfferedByTheGate(t *testing.T) {
	withTools := func(c *native.Config) {
		c.Builtins = []tools.Tool{tool{"commonly_post_message"}}
		c.Connectors = map[string][]tools.Tool{"github": {tool{"github_search_issues"}}}
		c.Checker = checker{}
	}
	r := newRig(t, withTools, say("hi"))
	in := install()
	in.Connectors = []string{"github"}
	r.run(context.Background(), in)
	var offered []string
	for _, s := range r.model.reqs[0].Tools {
		offered = append(offered, s.Name)
	}
	// Code execution is opt-in: an install without a list runs no code.
	if strings.Join(offered, ",") != "commonly_post_message,github_search_issues" {
		t.Errorf("offered %v", offered)
	}
	r = newRig(t, withTools, say("hi"))
	in = install()
	in.Tools = &[]string{"commonly_post_message"}
	r.run(context.Background(), in)
	if specs := r.model.reqs[0].Tools; len(specs) != 1 || specs[0].Name != "commonly_post_message" {
		t.Errorf("a list without commonly_run_code: offered %+v", specs)
	}

	r = newRig(t, withTools, say("hi"))
	in = install()
	in.Tools = &[]string{"commonly_run_code"}
	r.run(context.Background(), in)
	if specs := r.model.reqs[0].Tools; len(specs) != 1 || specs[0].Name != runcode.Name {
		t.Errorf("an install's list: offered %+v", specs)
	}
}

// Code execution is opt-in per install: without commonly_run_code in its
// list, an install's model is not offered it, and a call naming it anyway
// is refused at dispatch without a sandbox.
func TestCodeIsOptIn(t *testing.T) {
	for name, in := range map[string]*turns.Install{
		"no list":           install(),
		"a list without it": {InstallID: "inst-1", UserID: "user-1", AgentName: "helper", Tools: &[]string{}},
	} {
		r := newRig(t, nil, runCode(), say("no code then"))
		run, _ := r.run(context.Background(), in)
		if len(r.model.reqs[0].Tools) != 0 || run.Status != runs.StatusSucceeded || len(run.Steps) != 2 ||
			len(run.Steps[0].ToolCalls) != 1 || run.Steps[0].ToolCalls[0].OK || r.provider.created != 0 {
			t.Errorf("%s: offered %v, run %s %q, steps %+v, sandboxes %d", name, r.model.reqs[0].Tools, run.Status, run.ErrorMessage, run.Steps, r.provider.created)
		}
	}
}

// A tool the deployment knows but has not configured is not offered; the
// run records it and the turn goes on.
func TestUnconfiguredToolsAreRecordedOnTheRun(t *testing.T) {
	r := newRig(t, func(c *native.Config) {
		c.Builtins = []tools.Tool{tool{"commonly_post_message"}, tools.Unconfigured("commonly_web_search")}
	}, say("no search today"))
	in := install()
	in.Tools = &[]string{"commonly_web_search", "commonly_post_message", runcode.Name}
	run, res := r.run(context.Background(), in)
	if run.Status != runs.StatusSucceeded || res.Infrastructure || !slices.Equal(run.UnavailableTools, []string{"commonly_web_search"}) {
		t.Fatalf("run %s %q, unavailable %v", run.Status, run.ErrorMessage, run.UnavailableTools)
	}
	var offered []string
	for _, s := range r.model.reqs[0].Tools {
		offered = append(offered, s.Name)
	}
	if !slices.Equal(offered, []string{"commonly_post_message", runcode.Name}) {
		t.Errorf("offered %v", offered)
	}
}

// The names an install may list are the engine's whole catalog: its
// tools configured or not, and commonly_run_code; and its connectors.
func TestToolNames(t *testing.T) {
	r := newRig(t, func(c *native.Config) {
		c.Builtins = []tools.Tool{tool{"commonly_post_message"}, tools.Unconfigured("commonly_web_search")}
		c.Connectors = map[string][]tools.Tool{"github": {tools.Unconfigured("github_get_issue")}}
	})
	if got, want := r.engine.ToolNames(), []string{"commonly_post_message", runcode.Name, "commonly_web_search", "github_get_issue"}; !slices.Equal(got, want) {
		t.Errorf("ToolNames() = %v, want %v", got, want)
	}
	if got := r.engine.ConnectorNames(); !slices.Equal(got, []string{"github"}) {
		t.Errorf("ConnectorNames() = %v", got)
	}
}

// A turn whose tools cannot be offered fails as config before any model
// call, and is given back.
func TestOfferFailuresEndTheTurnAsConfig(t *testing.T) {
	r := newRig(t, nil)
	in := install()
	in.Tools = &[]string{"no_such_tool"}
	run, res := r.run(context.Background(), in)
	if run.Status != runs.StatusFailed || run.ErrorKind != runs.ErrConfig || !res.Infrastructure || len(r.model.reqs) != 0 ||
		!strings.HasPrefix(run.ErrorMessage, "the install's tools could not be offered: ") || run.CompletedAt == nil {
		t.Fatalf("unknown tool: %s %s %q refund %v, %d model calls", run.Status, run.ErrorKind, run.ErrorMessage, res.Infrastructure, len(r.model.reqs))
	}

	r = newRig(t, func(c *native.Config) {
		c.Connectors = map[string][]tools.Tool{"github": {tool{"github_search_issues"}}}
		c.Checker = checker{err: errors.New("broker: unavailable (status 503)")}
	})
	in = install()
	in.Connectors = []string{"github"}
	run, res = r.run(context.Background(), in)
	if run.ErrorKind != runs.ErrConfig || run.ErrorMessage != "the connector broker could not be reached" || !res.Infrastructure {
		t.Fatalf("broker down: %s %q refund %v", run.ErrorKind, run.ErrorMessage, res.Infrastructure)
	}
}

func TestNewChecksItsConfig(t *testing.T) {
	_, err := native.New(native.Config{})
	for _, want := range []string{"loop", "code", "pricer"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("empty config: %v, want it to name the %s", err, want)
		}
	}
}
