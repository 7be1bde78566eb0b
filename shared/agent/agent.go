// Package agent is the native engine's turn loop: a bounded agent loop
// against a chat-completions model that offers the install's gated tools,
// prices every call in integer micro-dollars and always leaves the run in
// a final status.
//
// The dependencies are declared here as narrow interfaces, where they are
// used: *llm.Client is a Model, the gate's *tools.Set is a Toolset, the
// pricing table is a Pricer and the pod client is a Poster.
package agent

import (
	"context"
	"time"

	"github.com/commonly/runtime/shared/llm"
	"github.com/commonly/runtime/shared/money"
	"github.com/commonly/runtime/shared/runs"
	"github.com/commonly/runtime/shared/tools"
)

// Model answers one chat-completions request. Errors are *llm.CallError
// wrapping llm.ErrGuardrail or llm.ErrCall.
type Model interface {
	Complete(ctx context.Context, req llm.Request) (*llm.Response, error)
}

// Pricer prices what a turn consumes. Every method fails rather than
// answer zero for something it does not know, so a turn is never free by
// mistake.
type Pricer interface {
	// ModelCostParts is the price of one call's usage at the time it was
	// made, split into the parts the run records (runs.Cost's model fields).
	ModelCostParts(model string, at time.Time, u llm.Usage) (runs.Cost, error)
	// WorstCase is the most a call with this prompt and output cap can cost.
	WorstCase(model string, promptTokens, maxOutputTokens int64) (money.Micros, error)
	SearchCost(provider string, queries int64) (money.Micros, error)
	SandboxCost(provider string, millis int64) (money.Micros, error)
	// Version names the price table, stamped on the run's cost.
	Version() string
}

// Toolset is the gate's decision for one turn: the tools offered to the
// model and the only ones that may run.
type Toolset interface {
	Specs() []llm.ToolSpec
	Lookup(name string) (tools.Tool, bool)
}

// Poster delivers the turn's final answer to the pod.
type Poster interface {
	Post(ctx context.Context, env tools.Env, content string) error
}
