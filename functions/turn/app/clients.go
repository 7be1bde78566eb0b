package app

import (
	"fmt"

	"github.com/commonly/runtime/shared/broker"
	"github.com/commonly/runtime/shared/llm"
	"github.com/commonly/runtime/shared/llm/offline"
	"github.com/commonly/runtime/shared/pricing"
	"github.com/commonly/runtime/shared/sandbox"
	"github.com/commonly/runtime/shared/sandbox/e2b"
	"github.com/commonly/runtime/shared/sandbox/local"
	"github.com/commonly/runtime/shared/tracing"
)

// modelClient is the model the loop calls (LiteLLM, or the offline model)
// and the name its calls are priced under, which must have a price.
func modelClient(cfg Config, d Deps, prices *pricing.Table) (*llm.Client, string, error) {
	llmCfg := llm.Config{BaseURL: cfg.LLMBaseURL, APIKey: cfg.LLMAPIKey, Timeout: cfg.LLMTimeout, HTTPClient: d.HTTP}
	name := cfg.defaultModel()
	if cfg.LLMMode == LLMOffline {
		llmCfg = llm.Config{BaseURL: offline.BaseURL, HTTPClient: offline.HTTPClient(), Timeout: cfg.LLMTimeout}
	}
	if d.Tracing.Enabled() {
		// The model call's span is its client span: no otelhttp span
		// under it (tracing.HTTPClient), the traceparent and HTTP facts
		// from this middleware.
		llmCfg.Middleware = tracing.ClientSpanHTTP
	}
	if err := prices.Model(name); err != nil {
		return nil, "", fmt.Errorf("LLM_MODEL %q: %w", name, err)
	}
	c, err := llm.New(llmCfg)
	return c, name, err
}

// brokerClient is the credential broker, when a part that needs it (pod
// tools, the GitHub connector) is on; nil otherwise.
func brokerClient(cfg Config, d Deps) (*broker.Client, error) {
	if !cfg.PodTools && !cfg.GitHub {
		return nil, nil
	}
	return broker.New(broker.Config{BaseURL: cfg.BrokerURL, Token: cfg.BrokerToken, HTTPClient: d.HTTP})
}

// sandboxProvider is where code runs: E2B, or the local sandbox.
func sandboxProvider(cfg Config, d Deps) (sandbox.Provider, error) {
	if cfg.Sandbox == SandboxLocal {
		if d.LocalSandbox != nil {
			return sandbox.Traced(d.LocalSandbox), nil
		}
		return sandbox.Traced(local.New(local.Config{})), nil
	}
	p, err := e2b.New(e2b.Config{APIKey: cfg.E2BAPIKey, Stage: cfg.Stage, Domain: cfg.E2BDomain, APIURL: cfg.E2BAPIURL, SandboxURL: cfg.E2BSandboxURL, Template: cfg.E2BTemplate, Now: d.Now})
	if err != nil {
		return nil, err
	}
	return sandbox.Traced(p), nil
}

// defaultModel is the model the native loop calls and prices unless an
// install names its own: the offline model, or LLM_MODEL.
func (c Config) defaultModel() string {
	if c.LLMMode == LLMOffline {
		return offline.Model
	}
	return c.LLMModel
}
