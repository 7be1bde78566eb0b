// Package app loads the turn function's configuration and wires its
// parts. The Lambda main and the local stack share it, so both run the
// same code with different settings.
package app

import (
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/commonly/runtime/shared/agent"
	"github.com/commonly/runtime/shared/httpwire"
	"github.com/commonly/runtime/shared/llm"
	"github.com/commonly/runtime/shared/money"
	"github.com/commonly/runtime/shared/pricing"
	"github.com/commonly/runtime/shared/sandbox/e2b"
	"github.com/commonly/runtime/shared/store"
	"github.com/commonly/runtime/shared/turns"
)

// Dispatch modes.
const (
	DispatchLambda = "lambda"
	DispatchInline = "inline"
)

// Model modes (Config.LLMMode).
const (
	// LLMLive calls LiteLLM at LLM_BASE_URL.
	LLMLive = "live"
	// LLMOffline answers with the in-process offline model.
	LLMOffline = "offline"
)

// Sandboxes (Config.Sandbox).
const (
	// SandboxE2B runs code in E2B microVMs.
	SandboxE2B = "e2b"
	// SandboxLocal runs code in the local bubblewrap sandbox.
	SandboxLocal = "local"
)

// Config is the turn function's configuration, read from the environment.
type Config struct {
	Tables          store.Tables
	DefaultEngine   turns.EngineName
	Limits          turns.Limits
	Dispatch        string
	FunctionName    string
	InstallCacheTTL time.Duration

	DORuntimeURL   string
	DORuntimeToken string

	LLMBaseURL string // empty: the offline model
	LLMAPIKey  string
	LLMModel   string
	LLMTimeout time.Duration
	TurnMaxUSD money.Micros
	PriceFile  string
	// SpendCap refuses a user's turns once their UTC day's cost reaches it
	// (DAILY_SPEND_CAP_USD); zero, the default, sets no cap.
	SpendCap money.Micros

	BrokerURL      string
	BrokerToken    string
	CommonlyAPIURL string
	SearchProvider string
	SearchAPIKey   string
	SearchAPIURL   string
	GitHubAPIURL   string

	E2BAPIKey     string
	E2BDomain     string
	E2BAPIURL     string
	E2BSandboxURL string
	E2BTemplate   string

	// What this deployment runs, each decided here once (features) from
	// the variables above; the wiring reads these and nothing else to
	// turn a part on.
	//
	// LLMMode is LLMLive with LLM_BASE_URL, else LLMOffline.
	LLMMode string
	// Sandbox is SandboxE2B with E2B_API_KEY, else SandboxLocal.
	Sandbox string
	// PodTools (the Commonly backend's tools, and final answers posted to
	// the pod) need COMMONLY_API_URL and BROKER_URL.
	PodTools bool
	// WebSearch needs SEARCH_API_KEY.
	WebSearch bool
	// GitHub, the connector, needs BROKER_URL for the user's tokens.
	GitHub bool
	// Fallback, the durable-object engine, needs DO_RUNTIME_URL.
	Fallback bool
}

// features decides what the deployment runs from what is configured.
func (c *Config) features() {
	c.LLMMode = LLMOffline
	if c.LLMBaseURL != "" {
		c.LLMMode = LLMLive
	}
	c.Sandbox = SandboxLocal
	if c.E2BAPIKey != "" {
		c.Sandbox = SandboxE2B
	}
	c.PodTools = c.CommonlyAPIURL != "" && c.BrokerURL != ""
	c.WebSearch = c.SearchAPIKey != ""
	c.GitHub = c.BrokerURL != ""
	c.Fallback = c.DORuntimeURL != ""
}

// LoadConfig reads the configuration through getenv (os.Getenv in main).
// Every problem is reported at once, so a misconfigured deployment fails
// at start with the whole list instead of one error per deploy.
func LoadConfig(getenv func(string) string) (Config, error) {
	var errs []error
	get := func(name, def string) string {
		if v := strings.TrimSpace(getenv(name)); v != "" {
			return v
		}
		return def
	}
	c := Config{
		Tables:         store.Tables{State: get("STATE_TABLE", ""), Runs: get("RUNS_TABLE", "")},
		Dispatch:       get("TURN_DISPATCH", DispatchLambda),
		FunctionName:   get("AWS_LAMBDA_FUNCTION_NAME", ""),
		DORuntimeURL:   get("DO_RUNTIME_URL", ""),
		DORuntimeToken: get("DO_RUNTIME_TOKEN", ""),
		LLMBaseURL:     get("LLM_BASE_URL", ""),
		LLMAPIKey:      get("LLM_API_KEY", ""),
		LLMModel:       get("LLM_MODEL", "deepseek-v4-flash"),
		PriceFile:      get(pricing.FileEnv, ""),
		BrokerURL:      get("BROKER_URL", ""),
		BrokerToken:    get("BROKER_TOKEN", ""),
		CommonlyAPIURL: get("COMMONLY_API_URL", ""),
		SearchProvider: get("SEARCH_PROVIDER", "exa"),
		SearchAPIKey:   get("SEARCH_API_KEY", ""),
		SearchAPIURL:   get("SEARCH_API_URL", ""),
		GitHubAPIURL:   get("GITHUB_API_URL", "https://api.github.com"),
		E2BAPIKey:      get("E2B_API_KEY", ""),
		E2BDomain:      get("E2B_DOMAIN", e2b.DefaultDomain),
		E2BAPIURL:      get("E2B_API_URL", ""),
		E2BSandboxURL:  get("E2B_SANDBOX_URL", ""),
		E2BTemplate:    get("E2B_TEMPLATE", e2b.DefaultTemplate),
	}
	if c.Tables.State == "" {
		errs = append(errs, errors.New("STATE_TABLE is required"))
	}
	if c.Tables.Runs == "" {
		errs = append(errs, errors.New("RUNS_TABLE is required"))
	}
	var err error
	if c.DefaultEngine, err = turns.ParseEngine(get("HOSTED_ENGINE", string(turns.Native))); err != nil {
		errs = append(errs, fmt.Errorf("HOSTED_ENGINE: %w", err))
	}
	if c.Limits, err = turns.ParseLimits(get("PLAN_TURN_LIMITS", turns.DefaultLimits)); err != nil {
		errs = append(errs, fmt.Errorf("PLAN_TURN_LIMITS: %w", err))
	}
	switch c.Dispatch {
	case DispatchInline:
	case DispatchLambda:
		if c.FunctionName == "" {
			errs = append(errs, errors.New("TURN_DISPATCH=lambda needs AWS_LAMBDA_FUNCTION_NAME"))
		}
	default:
		errs = append(errs, fmt.Errorf("TURN_DISPATCH: %q is not lambda or inline", c.Dispatch))
	}
	if c.InstallCacheTTL, err = time.ParseDuration(get("INSTALL_CACHE_TTL", "30s")); err != nil || c.InstallCacheTTL < 0 {
		errs = append(errs, fmt.Errorf("INSTALL_CACHE_TTL: %q is not a duration", get("INSTALL_CACHE_TTL", "")))
	}
	if c.LLMTimeout, err = llm.ParseTimeout(get("LLM_TIMEOUT", "")); err != nil {
		errs = append(errs, err)
	}
	if c.TurnMaxUSD, err = agent.ParseMaxCost(get("TURN_MAX_USD", "")); err != nil {
		errs = append(errs, err)
	}
	if capUSD := get("DAILY_SPEND_CAP_USD", ""); capUSD != "" {
		if c.SpendCap, err = money.FromUSD(capUSD); err != nil || c.SpendCap <= 0 {
			errs = append(errs, fmt.Errorf("DAILY_SPEND_CAP_USD: %q is not a positive amount of dollars (at most six decimals); unset it for no cap", capUSD))
		}
	}
	if c.LLMBaseURL != "" && c.LLMAPIKey == "" {
		errs = append(errs, errors.New("LLM_BASE_URL is set but LLM_API_KEY is not"))
	}
	// In a fixed order, so that the joined message is the same every start.
	for _, u := range []struct{ name, value string }{
		{"DO_RUNTIME_URL", c.DORuntimeURL}, {"LLM_BASE_URL", c.LLMBaseURL}, {"BROKER_URL", c.BrokerURL},
		{"COMMONLY_API_URL", c.CommonlyAPIURL}, {"SEARCH_API_URL", c.SearchAPIURL}, {"GITHUB_API_URL", c.GitHubAPIURL},
		{"E2B_API_URL", c.E2BAPIURL}, {"E2B_SANDBOX_URL", c.E2BSandboxURL},
	} {
		if u.value == "" {
			continue
		}
		if p, err := url.Parse(u.value); err != nil || !httpwire.IsHTTPURL(p) {
			errs = append(errs, fmt.Errorf("%s: %q is not an http(s) URL", u.name, u.value))
		}
	}
	if c.DORuntimeURL != "" && c.DORuntimeToken == "" {
		errs = append(errs, errors.New("DO_RUNTIME_URL is set but DO_RUNTIME_TOKEN is not"))
	}
	switch c.SearchProvider {
	case "exa", "tavily":
	default:
		errs = append(errs, fmt.Errorf("SEARCH_PROVIDER: %q is not exa or tavily", c.SearchProvider))
	}
	c.features()
	return c, errors.Join(errs...)
}
