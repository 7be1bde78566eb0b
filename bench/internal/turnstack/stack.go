// Package turnstack is what the benchmarks add to the local stack
// (infra/localstack), which builds the turn function with app.Build, the
// production wiring (store, turn service, worker, native engine, model
// client, price table, tool gate, handler): two options of that build,
// a no-op tool in the catalog, so that a turn's tool calls cost nothing
// and need no service, and a poster that accepts the final answer at
// once; the environment that sizes the benchmark; the client that drives
// the API as the frontend does; the stored copies of a turn.
package turnstack

import (
	"maps"

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

// Env is the turn function's environment for the benchmark, extra over
// it: the local stack's tables, inline dispatch, the scripted model's
// name and key (the stack serves it, or LLM_BASE_URL names it). Plan
// ceilings are raised so that hundreds of turns of one user are all
// admitted; the ceiling is still checked on each.
func Env(extra map[string]string) map[string]string {
	env := map[string]string{
		"STATE_TABLE": Tables.State, "RUNS_TABLE": Tables.Runs, "TURN_DISPATCH": app.DispatchInline,
		"LLM_API_KEY": APIKey, "LLM_MODEL": Model,
		// No code runs in the benchmark; the sandbox must still be named.
		"SANDBOX":          app.SandboxLocal,
		"PLAN_TURN_LIMITS": "free=100000000,pro=100000000",
	}
	maps.Copy(env, extra)
	return env
}

// Options are the benchmark's two differences from the production
// wiring: Noop in the native engine's catalog, and a poster that accepts
// every final answer at once (no broker, so no pod or connector tools).
func Options() []app.Option {
	return []app.Option{app.WithTools(Noop{}), app.WithPoster(AcceptPoster{})}
}
