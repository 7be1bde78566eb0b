package tracing

import (
	"go.opentelemetry.io/otel/attribute"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
)

// The runtime's own attributes, under commonly.*; the GenAI ones come
// from the semantic conventions (semconv v1.41.0, the last release that
// holds them).
const (
	RunID       = attribute.Key("commonly.run.id")
	InstallID   = attribute.Key("commonly.install.id")
	UserID      = attribute.Key("commonly.user.id")
	Engine      = attribute.Key("commonly.engine")
	RunStatus   = attribute.Key("commonly.run.status")
	ErrorKind   = attribute.Key("commonly.run.error_kind")
	TotalTokens = attribute.Key("commonly.usage.total_tokens")
	// CostMicros is a cost in integer micro-dollars (shared/money).
	CostMicros = attribute.Key("commonly.cost_micros")
	// Estimated marks a model call's usage as estimated: the call failed
	// without reporting usage and may still have been billed.
	Estimated = attribute.Key("commonly.usage.estimated")
	// Step is a model call's index in the run.
	Step = attribute.Key("commonly.step")
	// Refunded says the run's turn was given back to the user's day.
	Refunded = attribute.Key("commonly.run.refunded")
	// Sandbox names the sandbox provider; SandboxID the sandbox.
	Sandbox   = attribute.Key("commonly.sandbox.provider")
	SandboxID = attribute.Key("commonly.sandbox.id")
	// Runs is how many runs a batch or sweep handled.
	Runs = attribute.Key("commonly.runs")

	ErrorType = semconv.ErrorTypeKey
)
