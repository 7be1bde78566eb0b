// Package runcode is the commonly_run_code tool: Python or JavaScript run
// in one sandbox per turn, created on the first run, reused by later runs
// and killed when the turn ends. It bounds what the model can ask for
// (runs, code size, time) and what it gets back (output size).
package runcode

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/commonly/runtime/shared/llm"
	"github.com/commonly/runtime/shared/sandbox"
	"github.com/commonly/runtime/shared/tools"
)

// Name is the tool's name as the model sees it.
const Name = "commonly_run_code"

// Defaults of Config: the per-turn limits of docs/native-loop.md, "Code execution".
const (
	DefaultRunTimeout     = 30 * time.Second
	DefaultMaxRuns        = 5
	DefaultMaxCodeChars   = 20_000
	DefaultMaxOutputChars = 4_000
)

// Ledger records sandboxes so that the reaper has a second source besides
// the provider's listing. Implemented on DynamoDB.
type Ledger interface {
	SandboxCreated(ctx context.Context, rec sandbox.Record) error
	SandboxKilled(ctx context.Context, sandboxID string, at time.Time) error
}

// Config is shared by every turn's tool.
type Config struct {
	Provider sandbox.Provider
	Ledger   Ledger
	// Now defaults to time.Now.
	Now func() time.Time
	// RunTimeout bounds each run (default 30 s).
	RunTimeout time.Duration
	// MaxRuns bounds runs per turn (default 5).
	MaxRuns int
	// MaxCodeChars bounds the code of one run, in characters (default 20,000).
	MaxCodeChars int
	// MaxOutputChars bounds each of stdout, stderr, results and the error
	// returned to the model, in characters (default 4,000).
	MaxOutputChars int
	// MaxSandboxes caps the sandboxes the whole deployment runs at once
	// (SANDBOX_MAX_CONCURRENT), held in Slots: a turn that would pass it
	// is told so as a tool error and the turn goes on without code. Zero
	// is no cap.
	MaxSandboxes int
	// Slots keep the cap; required when MaxSandboxes is set.
	Slots sandbox.Slots
}

// Factory makes one Tool per turn.
type Factory struct {
	cfg Config
	// spec depends only on cfg: built once, shared by every turn's tool.
	spec llm.ToolSpec
}

// NewFactory checks cfg and fills its defaults.
func NewFactory(cfg Config) (*Factory, error) {
	if cfg.Provider == nil {
		return nil, errors.New("runcode: Provider is required")
	}
	if cfg.Ledger == nil {
		return nil, errors.New("runcode: Ledger is required: unrecorded sandboxes escape the reaper")
	}
	if cfg.MaxSandboxes < 0 {
		return nil, fmt.Errorf("runcode: MaxSandboxes %d is negative", cfg.MaxSandboxes)
	}
	if cfg.MaxSandboxes > 0 && cfg.Slots == nil {
		return nil, errors.New("runcode: Slots are required to cap the sandboxes")
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.RunTimeout <= 0 {
		cfg.RunTimeout = DefaultRunTimeout
	}
	if cfg.MaxRuns <= 0 {
		cfg.MaxRuns = DefaultMaxRuns
	}
	if cfg.MaxCodeChars <= 0 {
		cfg.MaxCodeChars = DefaultMaxCodeChars
	}
	if cfg.MaxOutputChars <= 0 {
		cfg.MaxOutputChars = DefaultMaxOutputChars
	}
	return &Factory{cfg: cfg, spec: spec(cfg)}, nil
}

// ProviderName names the sandbox provider, under which sandbox time is
// priced.
func (f *Factory) ProviderName() string { return f.cfg.Provider.Name() }

// New returns the tool for one turn. The owner must Close it when the
// turn ends.
func (f *Factory) New() *Tool { return &Tool{cfg: f.cfg, spec: f.spec, lifeLeft: sandbox.Lifetime} }

// Tool is commonly_run_code for one turn.
type Tool struct {
	cfg  Config
	spec llm.ToolSpec

	// callMu serialises calls: the sandbox runs one program at a time.
	callMu sync.Mutex

	mu      sync.Mutex
	session sandbox.Session
	// slot is the place the turn's sandbox holds under the deployment's
	// cap, released once the sandbox is killed; nil without a cap.
	slot   *sandbox.Slot
	runs   int
	lost   error // set once the sandbox was lost; the turn is over
	closed bool
	// created, ranMillis and idleMillis account for the sandbox's whole
	// life: providers bill from create to kill, runs price only their own
	// time, and Close leaves the rest in idleMillis for the owner to price.
	created    time.Time
	ranMillis  int64
	idleMillis int64
	// lifeLeft is what the turn's sandboxes' one lifetime has left (less
	// than sandbox.Lifetime once Resume counted a stopped attempt's);
	// restarted that the next new sandbox's first run says files are gone.
	lifeLeft  time.Duration
	restarted bool
}

// IdleMillis is how long, after Close, the turn's sandbox was alive
// without running code: its life from create to kill minus the runs
// already priced. Zero when no sandbox was created.
func (t *Tool) IdleMillis() int64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.idleMillis
}

var (
	_ tools.Tool   = (*Tool)(nil)
	_ tools.Closer = (*Tool)(nil)
)

// Spec implements tools.Tool.
func (t *Tool) Spec() llm.ToolSpec { return t.spec }

// spec describes the tool with cfg's limits. Its Parameters are shared by
// every turn's tool and must only be read.
func spec(cfg Config) llm.ToolSpec {
	return llm.ToolSpec{
		Name: Name,
		Description: fmt.Sprintf("Run Python or JavaScript code in an isolated sandbox without internet access "+
			"and get back its stdout, stderr, results and any exception. Use it for calculations, data "+
			"processing and checking code. Files written in the working directory are kept for later runs "+
			"in this turn; variables may not be, so make each run self-contained. Limits: %d runs per turn, "+
			"%d characters of code and %v per run; each output is cut to %d characters, so print only what you need.",
			cfg.MaxRuns, cfg.MaxCodeChars, cfg.RunTimeout, cfg.MaxOutputChars),
		Parameters: map[string]any{
			"type": "object",
			"properties": map[string]any{
				"language": map[string]any{
					"type":        "string",
					"enum":        []string{string(sandbox.Python), string(sandbox.JavaScript)},
					"description": "python (CPython 3) or javascript (Node.js)",
				},
				"code": map[string]any{
					"type":        "string",
					"description": "The program to run. Print results to stdout.",
					"maxLength":   cfg.MaxCodeChars,
				},
			},
			"required":             []string{"language", "code"},
			"additionalProperties": false,
		},
	}
}

// Close implements tools.Closer: it kills the turn's sandbox, if one was
// created, and records the kill. Only the first call acts. When the kill
// fails the record stays "running" and the reaper finishes the job.
func (t *Tool) Close(ctx context.Context) error {
	t.mu.Lock()
	if t.closed {
		t.mu.Unlock()
		return nil
	}
	t.closed = true
	s := t.session
	t.mu.Unlock()
	if s == nil {
		return nil
	}
	err := t.kill(ctx, s)
	t.mu.Lock()
	t.idleMillis = max(t.cfg.Now().Sub(t.created).Milliseconds()-t.ranMillis, 0)
	t.mu.Unlock()
	return err
}

// releaseSlot frees the turn's place under the cap, once its sandbox is
// gone (or was never made). Detached and bounded: a release that fails
// only holds the place until it lapses (sandbox.SlotGrace after the
// sandbox's lifetime), so it is not the turn's failure.
func (t *Tool) releaseSlot(ctx context.Context) {
	t.mu.Lock()
	slot := t.slot
	t.slot = nil
	t.mu.Unlock()
	if slot == nil {
		return
	}
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), killTimeout)
	defer cancel()
	_ = t.cfg.Slots.ReleaseSlot(rctx, *slot)
}

// kill destroys a session and records it.
func (t *Tool) kill(ctx context.Context, s sandbox.Session) error {
	if err := s.Kill(ctx); err != nil {
		return fmt.Errorf("runcode: kill sandbox %s: %w", s.ID(), err)
	}
	if err := t.cfg.Ledger.SandboxKilled(ctx, s.ID(), t.cfg.Now()); err != nil {
		return fmt.Errorf("runcode: record kill of sandbox %s: %w", s.ID(), err)
	}
	t.releaseSlot(ctx)
	return nil
}
