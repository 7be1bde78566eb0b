// Package tools defines what a tool offered to the model is, and the gate
// that decides which tools an install offers.
package tools

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/commonly/runtime/shared/llm"
	"github.com/commonly/runtime/shared/runs"
)

// Env is what a tool knows of the turn it runs in. It holds identifiers
// only: credentials are fetched by the tool from the broker when it needs
// them and never travel through the model, the run record or a log line.
type Env struct {
	RunID     string
	UserID    string
	InstallID string
	PodID     string
	AgentName string
	// IdempotencyKey names one call of the turn (its run, step and call,
	// or the final post), the same in every attempt of the run: a tool
	// that acts outside the runtime sends it (the Idempotency-Key header),
	// so that the backend drops a repeat made by an attempt that took
	// over from one that stopped before recording the call's result.
	IdempotencyKey string
}

// Effectful is implemented by tools that act outside the runtime (post a
// message, create a task, write memory): the loop makes the turn's
// journal durable before each of their calls and gives each call its own
// Env.IdempotencyKey.
type Effectful interface {
	Effectful()
}

// Progress receives what a tool call does as it happens, for the run's
// events. Either func may be nil; a tool calls them (from any goroutine)
// only until Call returns.
type Progress struct {
	// Output is text a code run printed, as it printed it (stream
	// "stdout" or "stderr").
	Output func(stream, text string)
	// SandboxCreated is a sandbox made for the call, before code runs in it.
	SandboxCreated func(sandboxID string)
}

type progressKey struct{}

// WithProgress returns the context of one call that reports to p (the
// loop sets it for each call; a context, so that no tool's signature or
// Env changes for it).
func WithProgress(ctx context.Context, p Progress) context.Context {
	return context.WithValue(ctx, progressKey{}, p)
}

// ProgressOf is the call's Progress; its funcs are nil when none was set.
func ProgressOf(ctx context.Context) Progress {
	p, _ := ctx.Value(progressKey{}).(Progress)
	return p
}

// Tool is one function the model may call.
type Tool interface {
	Spec() llm.ToolSpec
	// Call runs the tool with the model's arguments, which the loop has
	// already checked to be a JSON object. It must honour ctx.
	Call(ctx context.Context, env Env, args json.RawMessage) Result
}

// Closer is implemented by tools that hold per-turn resources (the code
// sandbox). The loop's owner closes every such tool when the turn ends,
// on every path, with a context that is not the turn's (which may be
// cancelled already).
type Closer interface {
	Close(ctx context.Context) error
}

// Result is what a tool call produced.
type Result struct {
	// Output is returned to the model as the tool message, JSON-encoded
	// as {"ok":true,...Output}. It must not hold credentials.
	Output any
	// Err is a tool-level failure reported to the model as
	// {"ok":false,"error":Err.Error()}; the turn goes on.
	Err error
	// Fatal, when set, ends the turn: an infrastructure failure that is
	// not the model's to handle (a sandbox lost mid-turn). Use Fail.
	Fatal *FatalError
	// Usage is what the call consumed that is priced.
	Usage Usage
	// CodeRun is recorded on the step for commonly_run_code.
	CodeRun *runs.CodeRun
	// Posted is true when the call posted a message to the pod, so the
	// loop does not post the final answer again.
	Posted bool
}

// Usage is the priced consumption of a tool call.
type Usage struct {
	SearchQueries int64
	SandboxMillis int64
}

// FatalError ends a turn with a given errorKind.
type FatalError struct {
	Kind runs.ErrorKind
	Err  error
	// Infrastructure marks failures that are ours, not the model's or the
	// user's (a sandbox lost mid-turn): the turn is refunded to the user's
	// daily ceiling.
	Infrastructure bool
}

func (e *FatalError) Error() string { return fmt.Sprintf("%s: %v", e.Kind, e.Err) }
func (e *FatalError) Unwrap() error { return e.Err }

// Fail builds a Result that ends the turn.
func Fail(kind runs.ErrorKind, infrastructure bool, err error) Result {
	return Result{Fatal: &FatalError{Kind: kind, Err: err, Infrastructure: infrastructure}}
}

// Errorf builds a Result that reports a tool error to the model.
func Errorf(format string, a ...any) Result {
	return Result{Err: fmt.Errorf(format, a...)}
}

// ErrBadArguments is wrapped by argument validation errors.
var ErrBadArguments = errors.New("invalid arguments")

// DecodeArgs decodes the model's arguments into dst strictly (unknown
// fields are an error), so a misspelt field is reported, not ignored.
func DecodeArgs(args json.RawMessage, dst any) error {
	dec := json.NewDecoder(bytes.NewReader(args))
	dec.DisallowUnknownFields()
	if err := dec.Decode(dst); err != nil {
		return fmt.Errorf("%w: %v", ErrBadArguments, err)
	}
	return nil
}
