// Package native is the native engine: the turn adapter around the agent
// loop (shared/agent). Per turn it offers the install's tools through the
// gate, gives the turn its own commonly_run_code (one sandbox), runs the
// loop with the install's prompt (or a default one) and model, and when
// the turn ends, on every path, kills the sandbox and charges its life
// outside its runs.
package native

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/commonly/runtime/shared/agent"
	"github.com/commonly/runtime/shared/money"
	"github.com/commonly/runtime/shared/runs"
	"github.com/commonly/runtime/shared/sandbox"
	"github.com/commonly/runtime/shared/tools"
	"github.com/commonly/runtime/shared/tools/runcode"
	"github.com/commonly/runtime/shared/turns"
)

// killTimeout bounds the sandbox kill at turn end.
const killTimeout = 10 * time.Second

// SandboxPricer prices a sandbox's time. *pricing.Table implements it.
type SandboxPricer interface {
	SandboxCost(provider string, millis int64) (money.Micros, error)
}

// Config configures the engine. Zero values are the documented defaults;
// New refuses what the engine cannot run with.
type Config struct {
	// Loop runs the turns; required.
	Loop *agent.Loop
	// Code makes each turn's commonly_run_code (one sandbox per turn);
	// required.
	Code *runcode.Factory
	// Prices prices the sandbox's idle time under the code factory's
	// provider; required.
	Prices SandboxPricer
	// Builtins are offered to every turn the install allows them for;
	// stateless, shared by every turn. A tool the deployment has not
	// configured is here as a tools.Unconfigured stand-in. Each turn's
	// commonly_run_code is offered only to an install that lists it.
	Builtins []tools.Tool
	// Connectors are the tools each connector offers (e.g. github).
	Connectors map[string][]tools.Tool
	// Checker checks a user's connection to a connector; nil offers no
	// connector tools (an install enabling one fails its turns as config).
	Checker tools.ConnectionChecker
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// Log gets a line when a sandbox cannot be killed or priced; nil
	// means slog.Default().
	Log *slog.Logger
}

// Engine is the native engine, a turns.Engine.
type Engine struct {
	cfg Config
	// toolNames and connectorNames are what an install may list.
	toolNames, connectorNames []string
}

var _ turns.Engine = (*Engine)(nil)

// New checks cfg and fills its defaults.
func New(cfg Config) (*Engine, error) {
	var errs []error
	if cfg.Loop == nil {
		errs = append(errs, errors.New("native: a loop is required"))
	}
	if cfg.Code == nil {
		errs = append(errs, errors.New("native: a code tool factory is required"))
	}
	if cfg.Prices == nil {
		errs = append(errs, errors.New("native: a sandbox pricer is required"))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	// A turn's code tool holds nothing until its first call.
	cat := catalog(cfg, cfg.Code.New())
	return &Engine{cfg: cfg, toolNames: cat.Names(), connectorNames: cat.ConnectorNames()}, nil
}

// catalog is what a turn may be offered, code being its own
// commonly_run_code: opt-in, offered only to an install that lists it.
func catalog(cfg Config, code tools.Tool) tools.Catalog {
	return tools.Catalog{Builtins: cfg.Builtins, OptIn: []tools.Tool{code}, Connectors: cfg.Connectors}
}

// ToolNames are the tool names an install may list: the engine's whole
// catalog, configured in this deployment or not (turns.ServiceConfig
// refuses others).
func (e *Engine) ToolNames() []string { return slices.Clone(e.toolNames) }

// ConnectorNames are the connectors an install may enable.
func (e *Engine) ConnectorNames() []string { return slices.Clone(e.connectorNames) }

// Run runs one turn: it offers the install's tools through the gate, runs
// the loop, and kills the turn's sandbox on every path.
func (e *Engine) Run(ctx context.Context, t turns.EngineTurn) turns.EngineResult {
	run, in := t.Run, t.Install
	env := tools.Env{RunID: run.RunID, UserID: run.UserID, InstallID: run.InstallID, PodID: run.PodID, AgentName: run.AgentName}
	code := e.cfg.Code.New()
	run.Sandbox = e.cfg.Code.ProviderName()
	defer func() {
		// Detached from the turn's context, which may be cancelled: the
		// sandbox is killed whatever ended the turn.
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), killTimeout)
		defer cancel()
		err := code.Close(cctx)
		if err != nil {
			e.cfg.Log.WarnContext(ctx, "sandbox kill failed; the reaper will get it", "runId", run.RunID, "err", err)
		}
		recordKills(t.Events, run, err == nil)
		e.chargeIdleSandbox(ctx, run, code.IdleMillis())
	}()

	set, err := tools.Offer(ctx, catalog(e.cfg, code), tools.Selection{UserID: run.UserID, Tools: in.Tools, Connectors: in.Connectors}, e.cfg.Checker)
	if err != nil {
		kind, msg := runs.ErrConfig, "the install's tools could not be offered: "+err.Error()
		if errors.Is(err, tools.ErrConnectorCheck) {
			msg = "the connector broker could not be reached"
		}
		e.cfg.Log.WarnContext(ctx, "the install's tools could not be offered", "runId", run.RunID, "err", err)
		run.End(runs.StatusFailed, kind, msg, e.cfg.Now())
		// Our configuration or the broker: an infrastructure failure.
		return turns.EngineResult{Infrastructure: true}
	}
	if run.UnavailableTools = set.Unavailable(); run.UnavailableTools != nil {
		e.cfg.Log.InfoContext(ctx, "tools not configured here are not offered", "runId", run.RunID, "tools", run.UnavailableTools)
	}

	var resume *agent.Resume
	if t.Resumed != nil {
		resume = e.resume(ctx, run, t.Resumed, code, t.Events)
	}
	// An install's model is priced per call: an unpriced one fails the
	// turn as config.
	out := e.cfg.Loop.Run(ctx, agent.TurnInput{
		Run: run, System: systemPrompt(in), Message: run.Message, Tools: set, Env: env, Model: in.Model, Checkpoint: t.Checkpoint, Events: t.Events,
		Journal: t.Journal, Resume: resume, Leave: leaving,
	})
	return turns.EngineResult{Infrastructure: out.Infrastructure, Leave: out.Leave}
}

// leaving is the loop's Leave: a turn interrupted because its invocation
// is ending, with its bounds left, is left for another attempt.
func leaving(cause error) bool { return errors.Is(cause, turns.ErrAttemptEnding) }

// resume prepares a turn taken over from a stopped attempt: the
// sandboxes that attempt left are killed (one sandbox alive at a time)
// and their life after their recorded runs measured for the lost
// attempt's estimate; the turn's code tool goes on from the runs the run
// recorded; the journal is handed to the loop.
func (e *Engine) resume(ctx context.Context, run *runs.Run, r *turns.Resumption, code *runcode.Tool, rec runs.Recorder) *agent.Resume {
	now := e.cfg.Now()
	kctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), killTimeout)
	defer cancel()
	ran := map[string]int64{}
	runsMade, lifeUsed := 0, time.Duration(0)
	for _, s := range run.Steps {
		for _, c := range s.ToolCalls {
			if cr := c.CodeRun; cr != nil && cr.ExitKind != runcode.ExitRejected {
				runsMade++
				ran[cr.SandboxID] += cr.DurationMs
				lifeUsed += time.Duration(cr.DurationMs) * time.Millisecond
			}
		}
	}
	for _, l := range run.LostAttempts {
		lifeUsed += time.Duration(l.SandboxMillis) * time.Millisecond
	}
	// The sandboxes the run recorded, and any the stopped attempt made
	// but died before recording (the provider lists them by the run's
	// tag; nothing of theirs ran on record, so their whole life is lost).
	recorded := make(map[string]bool, len(r.Sandboxes))
	left := make([]sandbox.Listed, 0, len(r.Sandboxes))
	for _, sb := range r.Sandboxes {
		recorded[sb.SandboxID] = true
		left = append(left, sandbox.Listed{ID: sb.SandboxID, StartedAt: sb.CreatedAt})
	}
	unrecorded, err := e.cfg.Code.Unrecorded(kctx, run.RunID, recorded)
	if err != nil {
		e.cfg.Log.WarnContext(ctx, "the stopped attempt's unrecorded sandboxes could not be listed; their timeout and the reaper end them", "runId", run.RunID, "err", err)
	}
	var lost int64
	for _, sb := range append(left, unrecorded...) {
		err := e.cfg.Code.KillLeft(kctx, sb.ID, recorded[sb.ID], now)
		if err != nil {
			e.cfg.Log.WarnContext(ctx, "the stopped attempt's sandbox could not be killed; the reaper will get it", "runId", run.RunID, "sandboxId", sb.ID, "recorded", recorded[sb.ID], "err", err)
		}
		runs.Record(rec, runs.SandboxKilled{SandboxID: sb.ID, OK: err == nil})
		life := min(now.Sub(sb.StartedAt), sandbox.Lifetime).Milliseconds()
		lost += max(life-ran[sb.ID], 0)
	}
	code.Resume(runsMade, lifeUsed+time.Duration(lost)*time.Millisecond)
	entries := make([]string, len(r.Entries))
	for i, en := range r.Entries {
		entries[i] = en.Data
	}
	return &agent.Resume{Entries: entries, Lost: r.Lost, SandboxMillis: lost, Worked: time.Duration(run.Lease.WorkedMs) * time.Millisecond}
}

// chargeIdleSandbox adds the sandbox's life outside its runs to the run's
// cost: providers bill a sandbox from create to kill, and each run priced
// only its own time.
func (e *Engine) chargeIdleSandbox(ctx context.Context, run *runs.Run, idleMillis int64) {
	if idleMillis <= 0 {
		return
	}
	cost, err := e.cfg.Prices.SandboxCost(e.cfg.Code.ProviderName(), idleMillis)
	if err != nil {
		// Checked at start, so this is a bug: say so rather than drop it.
		e.cfg.Log.WarnContext(ctx, "idle sandbox time could not be priced", "runId", run.RunID, "err", err)
		return
	}
	run.AddCost(runs.Cost{SandboxMicros: cost})
}

// systemPrompt is the install's prompt, or a short default that tells the
// model where it is. It carries no credential and no user data.
func systemPrompt(in *turns.Install) string {
	if in.SystemPrompt != "" {
		return in.SystemPrompt
	}
	return DefaultSystemPrompt(in.AgentName)
}

// DefaultSystemPrompt is the prompt of an install that sets none.
func DefaultSystemPrompt(agentName string) string {
	return fmt.Sprintf("You are %s, an AI agent in a Commonly pod, working beside people. "+
		"Answer concisely. Use the tools you are offered when they help; your final answer is posted to the pod.", agentName)
}
