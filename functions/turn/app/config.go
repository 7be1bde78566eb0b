// Package app loads the turn function's configuration and wires its
// parts. The Lambda main and the local stack share it, so both run the
// same code with different settings.
package app

import (
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/commonly/runtime/shared/agent"
	"github.com/commonly/runtime/shared/engine/durableobject"
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

// Model modes (Config.LLMMode, LLM_MODE).
const (
	// LLMLive calls LiteLLM at LLM_BASE_URL: the default, so that a
	// deployment without LLM_BASE_URL refuses to start.
	LLMLive = "live"
	// LLMOffline answers with the in-process offline model: only when
	// asked for by name (the local stack, tests).
	LLMOffline = "offline"
)

// Sandboxes (Config.Sandbox, SANDBOX).
const (
	// SandboxE2B runs code in E2B microVMs: the default, so that a
	// deployment without E2B_API_KEY refuses to start.
	SandboxE2B = "e2b"
	// SandboxLocal runs code in the local bubblewrap sandbox: only when
	// asked for by name.
	SandboxLocal = "local"
)

// Config is the turn function's configuration, read from the environment.
type Config struct {
	// Stage is the deployment (STAGE): every E2B sandbox is tagged with
	// it, so that this stage's reaper finds them and no other's kills
	// them. Required with SANDBOX=e2b.
	Stage           string
	Tables          store.Tables
	DefaultEngine   turns.EngineName
	Limits          turns.Limits
	Dispatch        string
	FunctionName    string
	InstallCacheTTL time.Duration

	DORuntimeURL   string
	DORuntimeToken string
	// DORuntimeTimeout bounds one forwarded turn (DO_RUNTIME_TIMEOUT).
	DORuntimeTimeout time.Duration

	LLMBaseURL string // required in live mode
	LLMAPIKey  string
	LLMModel   string
	LLMTimeout time.Duration
	TurnMaxUSD money.Micros
	// MaxAttempts is how many workers may hold a native run in all, the
	// first and those that resume it after one stopped
	// (TURN_MAX_ATTEMPTS, default turns.DefaultMaxAttempts).
	MaxAttempts int
	PriceFile   string
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

	// What this deployment runs, each decided here once from the
	// variables above; the wiring reads these and nothing else to turn a
	// part on.
	//
	// LLMMode is LLM_MODE: LLMLive (the default; LLM_BASE_URL required)
	// or LLMOffline, only when named.
	LLMMode string
	// Sandbox is SANDBOX: SandboxE2B (the default; E2B_API_KEY required)
	// or SandboxLocal, only when named.
	Sandbox string
	// MaxSandboxes is SANDBOX_MAX_CONCURRENT: the most code sandboxes the
	// whole deployment runs at once (below the E2B plan's concurrency);
	// past it the code tool answers the model with a tool error. Zero (the
	// default, unset) is no cap; the stack sets one (docs/scale.md).
	MaxSandboxes int
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

// features decides the optional parts from what is configured. The
// model and the sandbox are not among them: they are named (modes).
func (c *Config) features() {
	c.PodTools = c.CommonlyAPIURL != "" && c.BrokerURL != ""
	c.WebSearch = c.SearchAPIKey != ""
	c.GitHub = c.BrokerURL != ""
	c.Fallback = c.DORuntimeURL != ""
}

// LoadConfig reads the configuration through getenv (os.Getenv in main).
// Every problem is reported at once, so a misconfigured deployment fails
// at start with the whole list instead of one error per deploy.
func LoadConfig(getenv func(string) string) (Config, error) {
	get := func(name, def string) string {
		if v := strings.TrimSpace(getenv(name)); v != "" {
			return v
		}
		return def
	}
	c := readSettings(get)
	var errs []error
	errs = append(errs, c.parseRouting(get)...)
	errs = append(errs, c.parseBudgets(get)...)
	errs = append(errs, c.modes()...)
	errs = append(errs, c.parseUpstreams(get)...)
	c.features()
	return c, errors.Join(errs...)
}

// lookup is a variable's trimmed value, or def when it is unset or blank.
type lookup func(name, def string) string

// readSettings takes the variables that are strings as they are.
func readSettings(get lookup) Config {
	return Config{
		Stage:          get("STAGE", ""),
		Tables:         store.Tables{State: get("STATE_TABLE", ""), Runs: get("RUNS_TABLE", "")},
		Dispatch:       get("TURN_DISPATCH", DispatchLambda),
		FunctionName:   get("AWS_LAMBDA_FUNCTION_NAME", ""),
		DORuntimeURL:   get("DO_RUNTIME_URL", ""),
		DORuntimeToken: get("DO_RUNTIME_TOKEN", ""),
		LLMMode:        get("LLM_MODE", LLMLive),
		Sandbox:        get("SANDBOX", SandboxE2B),
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
}

// parseRouting checks where turns are stored, routed and dispatched.
func (c *Config) parseRouting(get lookup) []error {
	var errs []error
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
	return errs
}

// parseBudgets reads what bounds a turn and a user's day: the model
// call's timeout, a turn's cost and the daily spend cap.
func (c *Config) parseBudgets(get lookup) []error {
	var errs []error
	var err error
	if c.LLMTimeout, err = llm.ParseTimeout(get("LLM_TIMEOUT", "")); err != nil {
		errs = append(errs, err)
	}
	if c.TurnMaxUSD, err = agent.ParseMaxCost(get("TURN_MAX_USD", "")); err != nil {
		errs = append(errs, err)
	}
	if v := get("TURN_MAX_ATTEMPTS", strconv.Itoa(turns.DefaultMaxAttempts)); v != "" {
		if c.MaxAttempts, err = strconv.Atoi(v); err != nil || c.MaxAttempts < 1 || c.MaxAttempts > 10 {
			c.MaxAttempts = 0
			errs = append(errs, fmt.Errorf("TURN_MAX_ATTEMPTS: %q is not a whole number from 1 to 10", v))
		}
	}
	if v := get("SANDBOX_MAX_CONCURRENT", "0"); v != "" {
		if c.MaxSandboxes, err = strconv.Atoi(v); err != nil || c.MaxSandboxes < 0 {
			c.MaxSandboxes = 0
			errs = append(errs, fmt.Errorf("SANDBOX_MAX_CONCURRENT: %q is not a whole number of sandboxes (0 for no cap)", v))
		}
	}
	if capUSD := get("DAILY_SPEND_CAP_USD", ""); capUSD != "" {
		if c.SpendCap, err = money.FromUSD(capUSD); err != nil || c.SpendCap <= 0 {
			errs = append(errs, fmt.Errorf("DAILY_SPEND_CAP_USD: %q is not a positive amount of dollars (at most six decimals); unset it for no cap", capUSD))
		}
	}
	return errs
}

// parseUpstreams checks the services the turn calls: the durable-object
// runtime's timeout and token, every URL, the search provider.
func (c *Config) parseUpstreams(get lookup) []error {
	var errs []error
	var err error
	if c.DORuntimeTimeout, err = durableobject.ParseTimeout(get("DO_RUNTIME_TIMEOUT", "")); err != nil {
		errs = append(errs, err)
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
	return errs
}

// modes checks the model and the sandbox the deployment named. The
// offline model and the local sandbox are demos: they run only when
// named, so that a deployment missing LLM_BASE_URL or E2B_API_KEY (the
// resolved value: in AWS the key comes through its secret) refuses to
// start rather than serve them. A mode named beside the other mode's
// settings is refused too: one of the two was meant, and guessing which
// is how a deployment ends up on the wrong one.
func (c *Config) modes() []error {
	errs := []error{
		checkMode("LLM_MODE", c.LLMMode, LLMLive, LLMOffline, "LLM_BASE_URL", c.LLMBaseURL != "", "the offline demo model"),
		checkMode("SANDBOX", c.Sandbox, SandboxE2B, SandboxLocal, "E2B_API_KEY", c.E2BAPIKey != "", "the local bubblewrap sandbox"),
	}
	if c.LLMMode == LLMLive && c.LLMBaseURL != "" && c.LLMAPIKey == "" {
		errs = append(errs, errors.New("LLM_BASE_URL is set but LLM_API_KEY is not"))
	}
	if c.Sandbox == SandboxE2B && c.Stage == "" {
		errs = append(errs, errors.New("STAGE is required with SANDBOX=e2b: it tags each sandbox for this deployment's reaper"))
	}
	return errs
}

// checkMode checks one mode variable: its real mode needs the setting
// need, and its demo mode, named for what it is, needs it unset.
func checkMode(variable, mode, real, demo, need string, set bool, what string) error {
	switch {
	case mode == real && !set:
		return fmt.Errorf("%s is required (%s is %s; set %s=%s for %s)", need, variable, real, variable, demo, what)
	case mode == demo && set:
		return fmt.Errorf("%s=%s but %s is set: unset one of them", variable, demo, need)
	case mode != real && mode != demo:
		return fmt.Errorf("%s: %q is not %s or %s", variable, mode, real, demo)
	}
	return nil
}

// Secrets are the configured credentials (the resolved values: in AWS
// each comes through its secret), which no log line may hold.
func (c Config) Secrets() []string {
	var out []string
	for _, s := range []string{c.LLMAPIKey, c.E2BAPIKey, c.SearchAPIKey, c.DORuntimeToken, c.BrokerToken} {
		if s != "" {
			out = append(out, s)
		}
	}
	return out
}
