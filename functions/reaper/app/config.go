// Package app loads the reaper function's configuration and wires its
// parts, for the Lambda main and the local stack alike.
package app

import (
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/commonly/runtime/shared/httpwire"
	"github.com/commonly/runtime/shared/sandbox"
	"github.com/commonly/runtime/shared/sandbox/e2b"
	"github.com/commonly/runtime/shared/store"
)

// Sandboxes (Config.Sandbox, SANDBOX): the provider whose sandboxes the
// reaper lists and kills, as the turn function's SANDBOX names it.
const (
	// SandboxE2B lists and kills E2B's: the default, E2B_API_KEY then
	// required.
	SandboxE2B = "e2b"
	// SandboxLocal kills the local provider's sessions when the stack
	// gives its provider (Deps.Local); a function alone reads the live
	// index and the runs, and kills nothing outside its process.
	SandboxLocal = "local"
)

// MaxLifetime bounds SANDBOX_LIFETIME: E2B's longest running time (Pro).
const MaxLifetime = 24 * time.Hour

// Config is the reaper function's configuration.
type Config struct {
	// Stage is STAGE, required: only this deployment's sandboxes are
	// listed and killed (their e2b.MetaStage).
	Stage string
	// Tables are STATE_TABLE (the live index, the sandbox records, the
	// refunds) and RUNS_TABLE (the open runs); both required.
	Tables store.Tables
	// Sandbox is SANDBOX: SandboxE2B (default) or SandboxLocal.
	Sandbox string
	// Lifetime is SANDBOX_LIFETIME: a duration or seconds, default
	// sandbox.Lifetime (180 s), at least that (a shorter one would kill
	// the sandboxes of turns still running) and at most MaxLifetime.
	Lifetime time.Duration
	// E2BAPIKey (E2B_API_KEY, in AWS through its secret), E2BDomain
	// (default e2b.app) and E2BAPIURL (default https://api.{domain}).
	E2BAPIKey string
	E2BDomain string
	E2BAPIURL string
	// TurnFunction is TURN_FUNCTION_NAME: the turn function, which the
	// reaper invokes asynchronously to re-dispatch a run whose worker
	// stopped with attempts left. Empty: such a run is closed
	// interrupted instead of resumed.
	TurnFunction string
}

// LoadConfig reads the configuration through getenv (in main, after the
// secrets are resolved) and reports every problem at once, in a fixed
// order.
func LoadConfig(getenv func(string) string) (Config, error) {
	get := func(name, def string) string {
		if v := strings.TrimSpace(getenv(name)); v != "" {
			return v
		}
		return def
	}
	var errs []error
	c := Config{
		Stage:     get("STAGE", ""),
		Tables:    store.Tables{State: get("STATE_TABLE", ""), Runs: get("RUNS_TABLE", "")},
		Sandbox:   get("SANDBOX", SandboxE2B),
		E2BAPIKey: get("E2B_API_KEY", ""),
		E2BDomain: get("E2B_DOMAIN", e2b.DefaultDomain),
		E2BAPIURL: get("E2B_API_URL", ""),

		TurnFunction: get("TURN_FUNCTION_NAME", ""),
	}
	for _, req := range []struct{ name, value string }{{"STAGE", c.Stage}, {"STATE_TABLE", c.Tables.State}, {"RUNS_TABLE", c.Tables.Runs}} {
		if req.value == "" {
			errs = append(errs, fmt.Errorf("%s is required", req.name))
		}
	}
	switch {
	case c.Sandbox == SandboxE2B && c.E2BAPIKey == "":
		errs = append(errs, fmt.Errorf("E2B_API_KEY is required (SANDBOX is e2b; set SANDBOX=local for the local sandbox)"))
	case c.Sandbox == SandboxLocal && c.E2BAPIKey != "":
		errs = append(errs, errors.New("SANDBOX=local but E2B_API_KEY is set: unset one of them"))
	case c.Sandbox != SandboxE2B && c.Sandbox != SandboxLocal:
		errs = append(errs, fmt.Errorf("SANDBOX: %q is not e2b or local", c.Sandbox))
	}
	var err error
	if c.Lifetime, err = httpwire.ParseTimeout("SANDBOX_LIFETIME", get("SANDBOX_LIFETIME", ""), sandbox.Lifetime, MaxLifetime); err != nil {
		errs = append(errs, err)
	} else if c.Lifetime < sandbox.Lifetime {
		errs = append(errs, fmt.Errorf("SANDBOX_LIFETIME: %s is below the turn's sandbox lifetime (%s): sandboxes of running turns would be killed", c.Lifetime, sandbox.Lifetime))
	}
	if c.E2BAPIURL != "" {
		if u, err := url.Parse(c.E2BAPIURL); err != nil || !httpwire.IsHTTPURL(u) {
			errs = append(errs, fmt.Errorf("E2B_API_URL: %q is not an http(s) URL", c.E2BAPIURL))
		}
	}
	return c, errors.Join(errs...)
}

// Secrets are the configured credentials (resolved values), which no log
// line may hold.
func (c Config) Secrets() []string {
	if c.E2BAPIKey == "" {
		return nil
	}
	return []string{c.E2BAPIKey}
}
