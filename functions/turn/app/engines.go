package app

import (
	"context"
	"errors"
	"fmt"

	"github.com/commonly/runtime/shared/agent"
	"github.com/commonly/runtime/shared/engine/durableobject"
	"github.com/commonly/runtime/shared/engine/native"
	"github.com/commonly/runtime/shared/pricing"
	"github.com/commonly/runtime/shared/store"
	"github.com/commonly/runtime/shared/tools"
	"github.com/commonly/runtime/shared/tools/github"
	"github.com/commonly/runtime/shared/tools/pod"
	"github.com/commonly/runtime/shared/tools/runcode"
	"github.com/commonly/runtime/shared/tools/search"
	"github.com/commonly/runtime/shared/turns"
)

// buildEngines builds the deployment's engines: always the native one
// (also returned: its catalog is what installs may list), and the
// durable-object one when Config.Fallback says so.
func buildEngines(cfg Config, d Deps, o options, st *store.Dynamo, prices *pricing.Table) (map[turns.EngineName]turns.Engine, *native.Engine, error) {
	nativeEngine, err := newNativeEngine(cfg, d, o, st, prices)
	if err != nil {
		return nil, nil, fmt.Errorf("native engine: %w", err)
	}
	engines := map[turns.EngineName]turns.Engine{turns.Native: nativeEngine}
	if cfg.Fallback {
		do, err := durableobject.New(durableobject.Config{
			BaseURL: cfg.DORuntimeURL, Token: cfg.DORuntimeToken, Prices: prices, DefaultModel: cfg.LLMModel,
			Timeout: cfg.DORuntimeTimeout, HTTPClient: d.HTTP, Now: d.Now, Log: d.Log,
		})
		if err != nil {
			return nil, nil, fmt.Errorf("durable object engine: %w", err)
		}
		engines[turns.DurableObject] = do
	}
	return engines, nativeEngine, nil
}

// newNativeEngine wires the native loop: the model, the tools the
// configuration turns on and the code sandbox. A tool the configuration
// leaves off stays in the catalog as tools.Unconfigured: installs may list
// it, and their turns go on without it and record it. It refuses to start
// with a model, search provider or sandbox that has no price: no turn is
// ever silently free.
func newNativeEngine(cfg Config, d Deps, o options, st *store.Dynamo, prices *pricing.Table) (*native.Engine, error) {
	model, modelName, err := modelClient(cfg, d, prices)
	if err != nil {
		return nil, err
	}
	tokenBroker, err := brokerClient(cfg, d)
	if err != nil {
		return nil, err
	}
	nativeCfg := native.Config{Prices: prices, Connectors: map[string][]tools.Tool{}, Now: d.Now, Log: d.Log}
	var poster agent.Poster = noPod{}
	if cfg.PodTools {
		pc, err := pod.New(pod.Config{BaseURL: cfg.CommonlyAPIURL, Tokens: tokenBroker, HTTPClient: d.HTTP, Now: d.Now})
		if err != nil {
			return nil, err
		}
		nativeCfg.Builtins = append(nativeCfg.Builtins, pc.Tools()...)
		poster = pc
	} else {
		d.Log.Warn("pod tools off: COMMONLY_API_URL and BROKER_URL are both needed; final answers are not posted")
		nativeCfg.Builtins = append(nativeCfg.Builtins, unconfigured(pod.Names)...)
	}
	if cfg.WebSearch {
		if err := prices.Search(cfg.SearchProvider); err != nil {
			return nil, fmt.Errorf("SEARCH_PROVIDER %q: %w", cfg.SearchProvider, err)
		}
		ws, err := search.New(search.Config{Provider: cfg.SearchProvider, APIKey: cfg.SearchAPIKey, BaseURL: cfg.SearchAPIURL, HTTPClient: d.HTTP})
		if err != nil {
			return nil, err
		}
		nativeCfg.Builtins = append(nativeCfg.Builtins, ws)
	} else {
		d.Log.Warn("web search off: SEARCH_API_KEY is not set")
		nativeCfg.Builtins = append(nativeCfg.Builtins, tools.Unconfigured(search.Name))
	}
	nativeCfg.Builtins = append(nativeCfg.Builtins, o.tools...)
	if o.poster != nil {
		poster = o.poster
	}
	if cfg.GitHub {
		gh, err := github.New(github.Config{BaseURL: cfg.GitHubAPIURL, Tokens: tokenBroker, HTTPClient: d.HTTP})
		if err != nil {
			return nil, err
		}
		nativeCfg.Connectors[github.Connector] = gh.Tools()
		nativeCfg.Checker = tokenBroker
	} else {
		nativeCfg.Connectors[github.Connector] = unconfigured(github.Names)
	}

	provider, err := sandboxProvider(cfg, d)
	if err != nil {
		return nil, err
	}
	if err := prices.Sandbox(provider.Name()); err != nil {
		return nil, fmt.Errorf("sandbox %q: %w", provider.Name(), err)
	}
	if nativeCfg.Code, err = runcode.NewFactory(runcode.Config{Provider: provider, Ledger: st, Now: d.Now,
		MaxSandboxes: cfg.MaxSandboxes, Slots: st}); err != nil {
		return nil, err
	}
	if nativeCfg.Loop, err = agent.New(agent.Config{
		Model: model, Pricer: prices, Poster: poster, ModelName: modelName,
		Limits:         agent.Limits{MaxCost: cfg.TurnMaxUSD},
		SearchProvider: cfg.SearchProvider, SandboxProvider: provider.Name(),
		// The answer is streamed, for the run's text.delta events: by
		// LiteLLM, and by the in-process offline model (paced, so that
		// `make run` shows the deltas too).
		Stream: true,
		Now:    d.Now, Logger: d.Log,
	}); err != nil {
		return nil, err
	}
	return native.New(nativeCfg)
}

func unconfigured(names []string) []tools.Tool {
	ts := make([]tools.Tool, len(names))
	for i, n := range names {
		ts[i] = tools.Unconfigured(n)
	}
	return ts
}

// noPod is the poster of a deployment without a pod backend: the answer
// stays on the run (postedToPod false).
type noPod struct{}

func (noPod) Post(context.Context, tools.Env, string) error {
	return errors.New("no pod backend configured (COMMONLY_API_URL)")
}
