package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"sync"
	"sync/atomic"

	"github.com/commonly/runtime/api"
	reaperapp "github.com/commonly/runtime/functions/reaper/app"
	"github.com/commonly/runtime/functions/turn/app"
	"github.com/commonly/runtime/infra/localstack"
	"github.com/commonly/runtime/shared/reaper"
	"github.com/commonly/runtime/shared/turns"
)

// banner prints what the stack started, the API's URL first, each line
// within 100 columns.
func banner(ctx context.Context, out io.Writer, st *localstack.Stack, do *doRuntime, events *eventsFile, tr trace, secret []byte) error {
	tables, err := st.DB.Describe(ctx, st.Tables.State, st.Tables.Runs)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "API: %s\n", st.APIURL)
	fmt.Fprintln(out, "Commonly turn runtime, local stack")
	line := func(name, format string, args ...any) {
		fmt.Fprintf(out, "  %-9s %s\n", name, fmt.Sprintf(format, args...))
	}
	line("OpenAPI", "%s (the API's contract, no token needed)", st.APIURL+api.Path)
	line("console", "%s/ (installs, usage, runs live, transcripts, traces)", st.APIURL)
	line("", "the API's reference at %s/docs", st.APIURL)
	line("traces", "%s", consoleTraces(tr))
	line("DynamoDB", "%s (embedded)", st.DynamoDBURL)
	for _, t := range tables {
		line("", "  %s", t)
	}
	cfg := st.TurnConfig
	if cfg.Dispatch == app.DispatchLambda {
		line("dispatch", "each turn an asynchronous Invoke of %q, as in AWS, through", cfg.FunctionName)
		line("", "the local Lambda at %s (TURN_DISPATCH=inline: in the request)", st.Lambda.URL)
	} else {
		line("dispatch", "%s: a turn runs inside its request", cfg.Dispatch)
	}
	kept := "kept"
	if events.created {
		kept = "removed at stop; EVENTS_FILE keeps them"
	}
	line("alarm", "the runs stream → the alarm function, at %s a user-day (DAILY_SPEND_ALARM_USD)", "$"+alarmThreshold(st))
	line("", "its events on the bus at %s, written to", st.Bus.URL)
	line("", "%s (%s)", events.path, kept)
	line("reaper", "every %s (REAPER_INTERVAL), %s:", st.ReaperEvery(), reaperSources(st.ReaperConfig))
	line("", "kills those past %s (SANDBOX_LIFETIME) + %s, closes runs open %s as interrupted",
		st.ReaperConfig.Lifetime, reaper.DefaultGrace, turns.RunMaxLife)
	if fn := st.ReaperConfig.TurnFunction; fn != "" {
		line("", "and re-dispatches to %q a run whose worker stopped with attempts left", fn)
	}
	line("DO", "%s", do.label(st.Env))
	line("model", "%s", modelLabel(cfg))
	line("sandbox", "%s", sandboxLabel(cfg))
	line("pods", "%s", podsLabel(cfg, st.Pods))
	line("JWT", "secret %q (HS256; LOCAL_JWT_SECRET changes it)", secret)
	fmt.Fprintln(out)
	return nil
}

func alarmThreshold(st *localstack.Stack) string { return st.AlarmConfig.Threshold.USD() }

func reaperSources(cfg reaperapp.Config) string {
	if cfg.Sandbox == reaperapp.SandboxE2B {
		return fmt.Sprintf("from E2B's list of stage %q and the state table", cfg.Stage)
	}
	return "from the local sandbox's sessions and the state table"
}

func modelLabel(cfg app.Config) string {
	if cfg.LLMMode == app.LLMOffline {
		return "the offline model (LLM_MODE=offline, as no LLM_BASE_URL is set), in-process"
	}
	return cfg.LLMModel + " at " + cfg.LLMBaseURL
}

func sandboxLabel(cfg app.Config) string {
	if cfg.Sandbox == app.SandboxE2B {
		return "E2B at " + cfg.E2BDomain
	}
	return "local bubblewrap (no E2B_API_KEY): no network, no environment, read-only root"
}

func podsLabel(cfg app.Config, pods *localstack.Pods) string {
	if pods != nil {
		return "local pod backend and broker at " + cfg.CommonlyAPIURL
	}
	return cfg.CommonlyAPIURL + " (broker " + cfg.BrokerURL + ")"
}

// printSweep says what a reaper invocation did, when it did something or
// failed.
func printSweep(out io.Writer, s localstack.Sweep) {
	r := s.Result
	switch {
	case s.Err != nil:
		fmt.Fprintf(out, "  reaper <- sweep failed: %v\n", s.Err)
	case r.Killed+r.AlreadyGone+r.KillFailures+r.RunsInterrupted+r.RunsLeft+r.SourceFailures > 0:
		fmt.Fprintf(out, "  reaper <- %d sandbox(es) killed, %d already gone, %d not killed; %d run(s) closed interrupted (%d refunded), %d left; %d source(s) failed\n",
			r.Killed, r.AlreadyGone, r.KillFailures, r.RunsInterrupted, r.RunsRefunded, r.RunsLeft, r.SourceFailures)
	}
}

// prefixLines writes each line it is given behind a prefix.
type prefixLines struct {
	mu     sync.Mutex
	w      io.Writer
	prefix string
}

func (p *prefixLines) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, line := range bytes.SplitAfter(b, []byte("\n")) {
		if len(line) == 0 {
			continue
		}
		if _, err := io.WriteString(p.w, p.prefix); err != nil {
			return 0, err
		}
		if _, err := p.w.Write(line); err != nil {
			return 0, err
		}
	}
	return len(b), nil
}

// gatedWriter passes writes on once on, and drops them before.
type gatedWriter struct {
	on atomic.Bool
	w  io.Writer
}

func (g *gatedWriter) Write(b []byte) (int, error) {
	if !g.on.Load() {
		return len(b), nil
	}
	return g.w.Write(b)
}
