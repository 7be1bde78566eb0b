// Package sandbox is the provider-neutral face of code execution: one
// isolated machine per turn, created on first use and killed at turn end.
// Providers (E2B in production, bubblewrap locally) implement Provider and
// Session; the commonly_run_code tool only sees this package.
package sandbox

import (
	"context"
	"errors"
	"time"
)

// Lifetime is how long a sandbox may live at most. The provider enforces it
// as a time-to-live and the reaper kills what outlived it: a backstop for a
// turn that dies without closing its sandbox.
const Lifetime = 180 * time.Second

// MaxStreamBytes bounds what one execution accumulates per stream (stdout,
// stderr, results, error) so that chatty or hostile code cannot grow our
// memory. Anything beyond is dropped and marked with TruncatedMarker.
const MaxStreamBytes = 1 << 20

// TruncatedMarker ends a stream that was cut at MaxStreamBytes.
const TruncatedMarker = "\n[output truncated]"

// Language is an interpreter a session can run.
type Language string

const (
	Python     Language = "python"
	JavaScript Language = "javascript"
)

// Valid reports whether l is a language every provider supports.
func (l Language) Valid() bool { return l == Python || l == JavaScript }

// Meta identifies who a sandbox is for. Providers attach it to the sandbox
// (E2B metadata) so that the reaper can find and attribute it.
type Meta struct {
	RunID     string
	UserID    string
	InstallID string
	// Deadline is when the sandbox must be dead at the latest (creation +
	// Lifetime).
	Deadline time.Time
}

// Provider creates sandboxes.
type Provider interface {
	// Name is recorded on the sandbox Record ("e2b", "local").
	Name() string
	// Create starts one sandbox. It returns ErrUnavailable when the
	// provider cannot run code at all (missing tool, no capacity).
	Create(ctx context.Context, meta Meta) (Session, error)
	// KillSandbox destroys a sandbox by its id: one another worker left
	// (a stopped attempt's). found is false when it was gone already.
	KillSandbox(ctx context.Context, sandboxID string) (found bool, err error)
	// RunSandboxes lists a run's sandboxes the provider still holds, by
	// the run's tag they were made with: one a stopped attempt made and
	// died before it recorded is among them.
	RunSandboxes(ctx context.Context, runID string) ([]Listed, error)
}

// Session is one running sandbox. Files and, where the provider keeps an
// interpreter alive, variables persist across Execute calls.
type Session interface {
	ID() string
	// Execute runs code and returns what it printed. The per-run deadline
	// comes from ctx: when it passes Execute returns ErrTimeout together
	// with the partial output. ErrLost means the sandbox is gone.
	Execute(ctx context.Context, lang Language, code string) (Execution, error)
	// Kill destroys the sandbox. Killing one that is already gone succeeds.
	Kill(ctx context.Context) error
}

// Execution is what one run produced. A run whose code raised is still a
// successful Execute: the exception is in Error.
type Execution struct {
	Stdout string
	Stderr string
	// Results are the text forms of rich results (the value of a notebook
	// cell's last expression, displayed objects).
	Results []string
	Error   *ExecError
	// Truncated is true when any part was cut at MaxStreamBytes.
	Truncated bool
}

// ExecError is an exception raised by the code (or the interpreter dying).
type ExecError struct {
	Name      string
	Value     string
	Traceback string
}

var (
	// ErrLost: the sandbox vanished (killed, expired, unreachable, stream
	// cut short). An infrastructure failure, not the code's fault.
	ErrLost = errors.New("sandbox lost")
	// ErrUnavailable: the provider cannot run code (bubblewrap missing, no
	// capacity). The turn goes on without code execution.
	ErrUnavailable = errors.New("sandbox unavailable")
	// ErrTimeout: the per-run deadline passed and the run was interrupted.
	ErrTimeout = errors.New("sandbox run timed out")
)
