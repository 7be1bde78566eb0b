// Package turnstack builds the turn function for the benchmarks: the
// production wiring of functions/turn/app (store, turn service, worker,
// native engine, model client, price table, tool gate, handler) with two
// differences: the tool catalog holds a no-op tool, so that a turn's tool
// calls cost nothing and need no service, and the final answer goes to a
// poster that accepts it at once.
package turnstack

import (
	"context"
	"fmt"

	"github.com/commonly/runtime/functions/turn/app"
	"github.com/commonly/runtime/shared/store"
)

// The benchmark's install, user and the local gateway's signing secret.
const (
	InstallID = "bench-install"
	UserID    = "bench-user"
	Secret    = "commonly-bench-secret"
	// Message is the user's message of every turn, on both sides.
	Message = "Call the noop tool twice, then answer."
	// Model is the model name both sides send; it is priced.
	Model = "deepseek-v4-flash"
	// APIKey is what both sides send to the scripted server.
	APIKey = "bench-key"
)

// Tables are the benchmark's table names (the local stack's).
var Tables = store.Tables{State: "commonly-state", Runs: "commonly-runs"}

// Config is the turn function's configuration for the benchmark, read
// through app.LoadConfig from the local stack's environment plus the
// scripted model. Plan ceilings are raised so that hundreds of turns of
// one user are all admitted; the ceiling is still checked on each.
func Config(llmBaseURL string, extra map[string]string) (app.Config, error) {
	env := map[string]string{
		"STATE_TABLE": Tables.State, "RUNS_TABLE": Tables.Runs, "TURN_DISPATCH": app.DispatchInline,
		"LLM_BASE_URL": llmBaseURL, "LLM_API_KEY": APIKey, "LLM_MODEL": Model,
		// No code runs in the benchmark; the sandbox must still be named.
		"SANDBOX":          app.SandboxLocal,
		"PLAN_TURN_LIMITS": "free=100000000,pro=100000000",
	}
	for k, v := range extra {
		env[k] = v
	}
	return app.LoadConfig(func(k string) string { return env[k] })
}

// Build wires the turn function with app.Build, the production wiring,
// adding Noop to the native engine's catalog and a poster that accepts
// every final answer at once (no broker, so no pod or connector tools).
func Build(ctx context.Context, cfg app.Config, d app.Deps) (*app.Built, error) {
	if cfg.LLMBaseURL == "" {
		return nil, fmt.Errorf("build: the benchmark needs LLM_BASE_URL (the scripted server)")
	}
	d.ExtraTools = append(d.ExtraTools, Noop{})
	d.Poster = AcceptPoster{}
	return app.Build(ctx, cfg, d)
}
