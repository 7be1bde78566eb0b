package app

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/commonly/runtime/shared/agent"
	"github.com/commonly/runtime/shared/broker"
	"github.com/commonly/runtime/shared/llm"
	"github.com/commonly/runtime/shared/llm/offline"
	"github.com/commonly/runtime/shared/pricing"
	"github.com/commonly/runtime/shared/runs"
	"github.com/commonly/runtime/shared/sandbox"
	"github.com/commonly/runtime/shared/sandbox/e2b"
	"github.com/commonly/runtime/shared/sandbox/local"
	"github.com/commonly/runtime/shared/store"
	"github.com/commonly/runtime/shared/tools"
	"github.com/commonly/runtime/shared/tools/github"
	"github.com/commonly/runtime/shared/tools/pod"
	"github.com/commonly/runtime/shared/tools/runcode"
	"github.com/commonly/runtime/shared/tools/search"
	"github.com/commonly/runtime/shared/turns"
)

// nativeEngine runs turns on the native agent loop.
type nativeEngine struct {
	loop     *agent.Loop
	prices   *pricing.Table
	sandbox  string // the sandbox provider's name, which prices its time
	now      func() time.Time
	builtins []tools.Tool // stateless, shared by every turn
	conns    map[string][]tools.Tool
	checker  tools.ConnectionChecker
	code     *runcode.Factory // one commonly_run_code (one sandbox) per turn
	log      logger
}

type logger interface {
	WarnContext(ctx context.Context, msg string, args ...any)
}

// buildNative wires the native loop: the model (LiteLLM, or the offline
// model without LLM_BASE_URL), the price table, and the tools this
// deployment can offer. It refuses to start with a model that has no
// price: no turn is ever silently free.
func buildNative(_ context.Context, cfg Config, d Deps, st *store.Dynamo) (*nativeEngine, *pricing.Table, error) {
	prices, err := pricing.Load(cfg.PriceFile)
	if err != nil {
		return nil, nil, err
	}
	prices = prices.WithClock(d.Now)

	llmCfg := llm.Config{BaseURL: cfg.LLMBaseURL, APIKey: cfg.LLMAPIKey, Timeout: cfg.LLMTimeout, HTTPClient: d.HTTP}
	modelName := cfg.LLMModel
	if cfg.LLMBaseURL == "" {
		llmCfg = llm.Config{BaseURL: offline.BaseURL, HTTPClient: offline.HTTPClient(), Timeout: cfg.LLMTimeout}
		modelName = offline.Model
	}
	if err := prices.Model(modelName); err != nil {
		return nil, nil, fmt.Errorf("LLM_MODEL %q: %w", modelName, err)
	}
	model, err := llm.New(llmCfg)
	if err != nil {
		return nil, nil, err
	}

	e := &nativeEngine{conns: map[string][]tools.Tool{}, log: d.Log}
	var poster agent.Poster = noPod{}
	var brk *broker.Client
	if cfg.BrokerURL != "" {
		if brk, err = broker.New(cfg.BrokerURL, cfg.BrokerToken, d.HTTP); err != nil {
			return nil, nil, err
		}
		e.checker = brk
	}
	if cfg.CommonlyAPIURL != "" && brk != nil {
		pc, err := pod.New(pod.Config{BaseURL: cfg.CommonlyAPIURL, Tokens: brk, HTTPClient: d.HTTP, Now: d.Now})
		if err != nil {
			return nil, nil, err
		}
		e.builtins = append(e.builtins, pc.Tools()...)
		poster = pc
	} else {
		d.Log.Warn("pod tools off: COMMONLY_API_URL and BROKER_URL are both needed; final answers are not posted")
	}
	if cfg.SearchAPIKey != "" {
		if err := prices.Search(cfg.SearchProvider); err != nil {
			return nil, nil, fmt.Errorf("SEARCH_PROVIDER %q: %w", cfg.SearchProvider, err)
		}
		ws, err := search.New(search.Config{Provider: cfg.SearchProvider, APIKey: cfg.SearchAPIKey, BaseURL: cfg.SearchAPIURL, HTTPClient: d.HTTP})
		if err != nil {
			return nil, nil, err
		}
		e.builtins = append(e.builtins, ws)
	} else {
		d.Log.Warn("web search off: SEARCH_API_KEY is not set")
	}
	e.builtins = append(e.builtins, d.ExtraTools...)
	if d.Poster != nil {
		poster = d.Poster
	}
	if brk != nil {
		gh, err := github.New(github.Config{BaseURL: cfg.GitHubAPIURL, Tokens: brk, HTTPClient: d.HTTP})
		if err != nil {
			return nil, nil, err
		}
		e.conns[github.Connector] = gh.Tools()
	}

	var provider sandbox.Provider
	if cfg.E2BAPIKey != "" {
		provider, err = e2b.New(e2b.Config{APIKey: cfg.E2BAPIKey, Domain: cfg.E2BDomain, APIURL: cfg.E2BAPIURL, SandboxURL: cfg.E2BSandboxURL, Template: cfg.E2BTemplate, Now: d.Now})
		if err != nil {
			return nil, nil, err
		}
	} else {
		provider = local.New(local.Config{})
	}
	if err := prices.Sandbox(provider.Name()); err != nil {
		return nil, nil, fmt.Errorf("sandbox %q: %w", provider.Name(), err)
	}
	if e.code, err = runcode.NewFactory(runcode.Config{Provider: provider, Ledger: st, Now: d.Now}); err != nil {
		return nil, nil, err
	}

	e.prices, e.sandbox, e.now = prices, provider.Name(), d.Now
	e.loop, err = agent.New(agent.Config{
		Model: model, Pricer: prices, Poster: poster, ModelName: modelName,
		Limits:         agent.Limits{MaxCost: cfg.TurnMaxUSD},
		SearchProvider: cfg.SearchProvider, SandboxProvider: provider.Name(),
		Now: d.Now, Logger: d.Log,
	})
	if err != nil {
		return nil, nil, err
	}
	return e, prices, nil
}

// Run runs one turn: it offers the install's tools through the gate, runs
// the loop, and kills the turn's sandbox on every path.
func (e *nativeEngine) Run(ctx context.Context, t turns.EngineTurn) turns.EngineResult {
	run, in := t.Run, t.Install
	env := tools.Env{RunID: run.RunID, UserID: run.UserID, InstallID: run.InstallID, PodID: run.PodID, AgentName: run.AgentName}
	code := e.code.New()
	defer func() {
		// Detached from the turn's context, which may be cancelled: the
		// sandbox is killed whatever ended the turn.
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		if err := code.Close(cctx); err != nil {
			e.log.WarnContext(ctx, "sandbox kill failed; the reaper will get it", "runId", run.RunID, "err", err)
		}
		e.chargeIdleSandbox(ctx, run, code.IdleMillis())
	}()

	catalog := tools.Catalog{Builtins: append(append([]tools.Tool{}, e.builtins...), code), Connectors: e.conns}
	set, err := tools.Offer(ctx, catalog, tools.Selection{UserID: run.UserID, Tools: in.Tools, Connectors: in.Connectors}, e.checker)
	if err != nil {
		kind, msg := runs.ErrConfig, "the install's tools could not be offered: "+err.Error()
		if errors.Is(err, tools.ErrConnectorCheck) {
			msg = "the connector broker could not be reached"
		}
		run.End(runs.StatusFailed, kind, msg, e.now())
		return turns.EngineResult{Refund: true}
	}

	// An install's model is priced per call: an unpriced one fails the
	// turn as config.
	out := e.loop.Run(ctx, agent.TurnInput{
		Run: run, System: systemPrompt(in), Message: run.Message, Tools: set, Env: env, Model: in.Model, Checkpoint: t.Checkpoint,
	})
	return turns.EngineResult{Refund: out.Refund}
}

// chargeIdleSandbox adds the sandbox's life outside its runs to the run's
// cost: providers bill a sandbox from create to kill, and each run priced
// only its own time.
func (e *nativeEngine) chargeIdleSandbox(ctx context.Context, run *runs.Run, idleMillis int64) {
	if idleMillis <= 0 {
		return
	}
	cost, err := e.prices.SandboxCost(e.sandbox, idleMillis)
	if err != nil {
		// Checked at start, so this is a bug: say so rather than drop it.
		e.log.WarnContext(ctx, "idle sandbox time could not be priced", "runId", run.RunID, "err", err)
		return
	}
	run.AddCost(runs.Cost{SandboxMicros: cost})
}

// systemPrompt is the install's prompt, or a short default that tells the
// model where it is. It carries no credential and no user data.
func systemPrompt(in *turns.Install) string {
	if in.SystemPrompt != "" {
		return in.SystemPrompt
	}
	return DefaultSystemPrompt(in.AgentName)
}

// DefaultSystemPrompt is the prompt of an install that sets none.
func DefaultSystemPrompt(agentName string) string {
	return fmt.Sprintf("You are %s, an AI agent in a Commonly pod, working beside people. "+
		"Answer concisely. Use the tools you are offered when they help; your final answer is posted to the pod.", agentName)
}

// noPod is the poster of a deployment without a pod backend: the answer
// stays on the run (postedToPod false).
type noPod struct{}

func (noPod) Post(context.Context, tools.Env, string) error {
	return errors.New("no pod backend configured (COMMONLY_API_URL)")
}
