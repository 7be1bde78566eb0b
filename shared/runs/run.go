// Package runs defines the AgentRun: one record per turn, whatever engine ran it.
package runs

import (
	"time"

	"github.com/commonly/runtime/shared/money"
	"github.com/commonly/runtime/shared/textcap"
)

// Status is where a run is in its life. queued and running are live; the
// rest are final and a run never leaves a final status.
type Status string

const (
	StatusQueued      Status = "queued"
	StatusRunning     Status = "running"
	StatusSucceeded   Status = "succeeded"
	StatusFailed      Status = "failed"
	StatusInterrupted Status = "interrupted"
	// StatusCancelled: its owner (or the service) asked to stop it
	// (POST /v1/runs/{runId}/cancel) before its answer was posted.
	StatusCancelled Status = "cancelled"
)

// Final reports whether no further transition is allowed.
func (s Status) Final() bool {
	return s == StatusSucceeded || s == StatusFailed || s == StatusInterrupted || s == StatusCancelled
}

// ErrorKind says why a run did not succeed. The set is closed: clients
// switch on it.
type ErrorKind string

const (
	ErrTurnCap          ErrorKind = "turn_cap"
	ErrTokenCap         ErrorKind = "token_cap"
	ErrTimeout          ErrorKind = "timeout"
	ErrToolError        ErrorKind = "tool_error"
	ErrLLM              ErrorKind = "llm_error"
	ErrGuardrailBlocked ErrorKind = "guardrail_blocked"
	ErrConfig           ErrorKind = "config"
	ErrFallback         ErrorKind = "fallback_error"
	ErrSandbox          ErrorKind = "sandbox_error"
	ErrInterrupted      ErrorKind = "interrupted"
	ErrUnknown          ErrorKind = "unknown"
	// ErrBudget is the money bound (TURN_MAX_USD); docs/native-loop.md,
	// "Budget, per turn", gives each bound its own kind.
	ErrBudget ErrorKind = "budget_cap"
)

// MaxErrorMessage bounds errorMessage so a run record stays small and a
// provider cannot stuff it.
const MaxErrorMessage = 1000

// DefaultTurnMaxCost is the most one turn may cost when none is
// configured: the default TURN_MAX_USD (0.25).
const DefaultTurnMaxCost = money.Micros(250_000)

// Run is the AgentRun record.
type Run struct {
	RunID      string `json:"runId" dynamodbav:"runId"`
	InstallID  string `json:"installId" dynamodbav:"installId"`
	UserID     string `json:"userId" dynamodbav:"userId"`
	PodID      string `json:"podId" dynamodbav:"podId"`
	AgentName  string `json:"agentName" dynamodbav:"agentName"`
	InstanceID string `json:"instanceId" dynamodbav:"instanceId"`
	Engine     string `json:"engine" dynamodbav:"engine"`
	// Plan is the user's plan the turn was admitted under (its ceiling);
	// empty on runs written before it was recorded.
	Plan string `json:"plan,omitempty" dynamodbav:"plan,omitempty"`
	// Model is the model that served the turn, as it is priced (a live
	// model's name, or offline-demo for the offline model); empty until an
	// engine runs it.
	Model string `json:"model,omitempty" dynamodbav:"model,omitempty"`
	// Sandbox is the code sandbox the turn's code ran or would have run
	// in: e2b, or local (the bubblewrap sandbox); empty for an engine
	// that runs code elsewhere.
	Sandbox string `json:"sandbox,omitempty" dynamodbav:"sandbox,omitempty"`
	Trigger string `json:"trigger,omitempty" dynamodbav:"trigger,omitempty"`
	// Message is the user's input for the turn; the worker reads it back
	// when the turn is dispatched asynchronously.
	Message string `json:"message" dynamodbav:"message"`
	// Day is the UTC day the turn was admitted on: the ceiling counter it
	// used and the day its cost is charged to.
	Day string `json:"day" dynamodbav:"day"`

	Status       Status    `json:"status" dynamodbav:"status"`
	ErrorKind    ErrorKind `json:"errorKind,omitempty" dynamodbav:"errorKind,omitempty"`
	ErrorMessage string    `json:"errorMessage,omitempty" dynamodbav:"errorMessage,omitempty"`

	CreatedAt   time.Time  `json:"createdAt" dynamodbav:"createdAt"`
	StartedAt   *time.Time `json:"startedAt,omitempty" dynamodbav:"startedAt,omitempty"`
	CompletedAt *time.Time `json:"completedAt,omitempty" dynamodbav:"completedAt,omitempty"`

	Steps        []Step       `json:"steps" dynamodbav:"steps"`
	Tokens       Tokens       `json:"tokens" dynamodbav:"tokens"`
	CostMicros   money.Micros `json:"costMicros" dynamodbav:"costMicros"`
	Cost         Cost         `json:"cost" dynamodbav:"cost"`
	FinalMessage string       `json:"finalMessage,omitempty" dynamodbav:"finalMessage,omitempty"`
	// PostedToPod is true once the final answer (or a post tool) reached the pod.
	PostedToPod bool `json:"postedToPod,omitempty" dynamodbav:"postedToPod,omitempty"`
	// UnavailableTools are the tools the install would have been offered
	// that the deployment has not configured (web search without a key):
	// the turn went on without them.
	UnavailableTools []string `json:"unavailableTools,omitempty" dynamodbav:"unavailableTools,omitempty"`
	// Refunded is true when the turn was given back to the user's daily
	// ceiling: it failed for an infrastructure reason before any model
	// call answered (RefundDue).
	Refunded bool `json:"refunded,omitempty" dynamodbav:"refunded,omitempty"`
	// TraceID is the OpenTelemetry trace the turn ran in (hex), empty when
	// tracing is off: support goes from a run to its trace with it.
	// TraceSpanID is the span that admitted it, what the alarm's and the
	// reaper's spans link to.
	TraceID     string `json:"traceId,omitempty" dynamodbav:"traceId,omitempty"`
	TraceSpanID string `json:"-" dynamodbav:"traceSpanId,omitempty"`

	// ReservedMicros is the money reserved for the turn at admission
	// under the daily spend cap (DAILY_SPEND_CAP_USD): the most the turn
	// may cost, bounding every model call and priced tool call it makes.
	// Zero when the deployment has no cap. The final write releases it.
	ReservedMicros money.Micros `json:"reservedMicros,omitempty" dynamodbav:"reservedMicros,omitempty"`
	// CapChargedMicros is what the final write charged to the day's
	// spend cap: the run's cost, or the whole reservation for a run
	// closed after its worker vanished mid-turn (its calls after the last
	// checkpoint are unknown). Set by whoever closes such a run; the store
	// records the amount it charged.
	CapChargedMicros money.Micros `json:"-" dynamodbav:"capChargedMicros,omitempty"`
	// Events are what happened in the run so far (events.go), kept on
	// the run's item for GET /v1/runs/{runId}/events, not in the run's
	// JSON; the store keeps them as one string (EncodeEvents).
	Events []StoredEvent `json:"-" dynamodbav:"-"`

	IdempotencyKey string `json:"-" dynamodbav:"idempotencyKey,omitempty"`
	RequestHash    string `json:"-" dynamodbav:"requestHash,omitempty"`

	// Attempts is how many workers have held the run: 1 once claimed, one
	// more for each worker that took it over after its holder stopped
	// (lease.go). LostAttempts are the attempts whose worker stopped
	// mid-turn, with what each may have cost beyond what it recorded.
	Attempts     int           `json:"attempts" dynamodbav:"attempt,omitempty"`
	LostAttempts []LostAttempt `json:"lostAttempts,omitempty" dynamodbav:"lostAttempts,omitempty"`
	// MaxAttempts caps Attempts (TURN_MAX_ATTEMPTS when the run was
	// admitted): a run whose worker stops past it ends interrupted.
	MaxAttempts int `json:"-" dynamodbav:"maxAttempts,omitempty"`
	// CancelRequestedAt is when a stop was asked for: the worker's next
	// write is refused for it, or its next look at the run finds it, and
	// it ends the run cancelled.
	CancelRequestedAt *time.Time `json:"cancelRequestedAt,omitempty" dynamodbav:"cancelRequestedAt,omitempty"`
	// Lease is the current attempt's hold on the run (lease.go); the store
	// keeps its parts as attributes of their own, for conditions.
	Lease Lease `json:"-" dynamodbav:"-"`
}

// Tokens are the run's totals over all model calls.
type Tokens struct {
	Prompt       int64 `json:"prompt" dynamodbav:"prompt"`
	CachedPrompt int64 `json:"cachedPrompt" dynamodbav:"cachedPrompt"`
	Completion   int64 `json:"completion" dynamodbav:"completion"`
	Total        int64 `json:"total" dynamodbav:"total"`
}

// Add accumulates another call's tokens.
func (t *Tokens) Add(prompt, cached, completion int64) {
	t.Prompt += prompt
	t.CachedPrompt += cached
	t.Completion += completion
	t.Total += prompt + completion
}

// Cost is the run's price broken down by what was paid for. CostMicros on
// the run is always Model+Sandbox+Search+Lost.
type Cost struct {
	ModelMicros   money.Micros `json:"modelMicros" dynamodbav:"modelMicros"`
	SandboxMicros money.Micros `json:"sandboxMicros" dynamodbav:"sandboxMicros"`
	SearchMicros  money.Micros `json:"searchMicros" dynamodbav:"searchMicros"`
	// LostMicros is what attempts whose worker stopped may have been
	// billed beyond what they recorded: the model call in flight (its
	// prompt and the output it was allowed) and the sandbox's life after
	// its last recorded run. An estimate, never below what the providers
	// can have billed (LostAttempt).
	LostMicros money.Micros `json:"lostMicros,omitempty" dynamodbav:"lostMicros,omitempty"`
	// InputMicros, CachedInputMicros and OutputMicros split ModelMicros
	// by what the model was paid for: prompt tokens at the cache-miss
	// rate, at the cache-hit rate, and completion tokens. Their sum is
	// ModelMicros for every call priced by the price table; a call
	// priced otherwise leaves them zero.
	InputMicros       money.Micros `json:"inputMicros,omitempty" dynamodbav:"inputMicros,omitempty"`
	CachedInputMicros money.Micros `json:"cachedInputMicros,omitempty" dynamodbav:"cachedInputMicros,omitempty"`
	OutputMicros      money.Micros `json:"outputMicros,omitempty" dynamodbav:"outputMicros,omitempty"`
	PriceVersion      string       `json:"priceVersion,omitempty" dynamodbav:"priceVersion,omitempty"`
}

// Total is the sum of the parts.
func (c Cost) Total() money.Micros {
	return c.ModelMicros + c.SandboxMicros + c.SearchMicros + c.LostMicros
}

// AddCost adds c's parts to the run's cost and sets CostMicros to their
// total: the one place CostMicros is computed. c.PriceVersion is not
// used; the run's price version is set by whoever prices it.
func (r *Run) AddCost(c Cost) {
	r.Cost.ModelMicros += c.ModelMicros
	r.Cost.SandboxMicros += c.SandboxMicros
	r.Cost.SearchMicros += c.SearchMicros
	r.Cost.LostMicros += c.LostMicros
	r.Cost.InputMicros += c.InputMicros
	r.Cost.CachedInputMicros += c.CachedInputMicros
	r.Cost.OutputMicros += c.OutputMicros
	r.CostMicros = r.Cost.Total()
}

// Step is one model call and the tool calls it asked for.
type Step struct {
	Index              int          `json:"index" dynamodbav:"index"`
	Model              string       `json:"model" dynamodbav:"model"`
	CallID             string       `json:"callId,omitempty" dynamodbav:"callId,omitempty"`
	PromptTokens       int64        `json:"promptTokens" dynamodbav:"promptTokens"`
	CachedPromptTokens int64        `json:"cachedPromptTokens" dynamodbav:"cachedPromptTokens"`
	CompletionTokens   int64        `json:"completionTokens" dynamodbav:"completionTokens"`
	FinishReason       string       `json:"finishReason,omitempty" dynamodbav:"finishReason,omitempty"`
	ElapsedMs          int64        `json:"elapsedMs" dynamodbav:"elapsedMs"`
	CostMicros         money.Micros `json:"costMicros" dynamodbav:"costMicros"`
	// Estimated marks a call whose answer never arrived (timed out or
	// failed after the request was sent, or an engine that reported no
	// usage): its tokens and cost are estimated from the request, because
	// the provider may still have billed it.
	Estimated bool       `json:"estimated,omitempty" dynamodbav:"estimated,omitempty"`
	ToolCalls []ToolCall `json:"toolCalls,omitempty" dynamodbav:"toolCalls,omitempty"`
}

// ToolCall records one tool call of a step. Args are stored capped; they
// are the model's words, never a credential (credentials are fetched by
// the tool, not passed through the model).
type ToolCall struct {
	ID        string   `json:"id" dynamodbav:"id"`
	Name      string   `json:"name" dynamodbav:"name"`
	Args      string   `json:"args" dynamodbav:"args"`
	OK        bool     `json:"ok" dynamodbav:"ok"`
	Error     string   `json:"error,omitempty" dynamodbav:"error,omitempty"`
	ElapsedMs int64    `json:"elapsedMs" dynamodbav:"elapsedMs"`
	CodeRun   *CodeRun `json:"codeRun,omitempty" dynamodbav:"codeRun,omitempty"`
}

// CodeRun records one commonly_run_code execution.
type CodeRun struct {
	Language   string `json:"language" dynamodbav:"language"`
	CodeChars  int    `json:"codeChars" dynamodbav:"codeChars"`
	ExitKind   string `json:"exitKind" dynamodbav:"exitKind"` // ok | error | timeout | rejected | sandbox_lost
	DurationMs int64  `json:"durationMs" dynamodbav:"durationMs"`
	SandboxID  string `json:"sandboxId,omitempty" dynamodbav:"sandboxId,omitempty"`
}

// End puts the run in a final status, completed at at. An empty kind and
// message mean success; the message is bounded by TruncateError.
func (r *Run) End(st Status, kind ErrorKind, msg string, at time.Time) {
	t := at.UTC()
	r.Status, r.ErrorKind, r.ErrorMessage, r.CompletedAt = st, kind, TruncateError(msg), &t
}

// TruncateError bounds an error message for the record.
func TruncateError(s string) string { return textcap.Bytes(s, MaxErrorMessage) }
