// Command local is `make run`: the whole turn stack on one machine
// (infra/localstack: the embedded DynamoDB, the four functions on the AWS
// stand-ins, turns dispatched through a local Lambda as in AWS), a local
// pod backend and broker, and a demo install and turn. No cloud account,
// no Docker.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/commonly/runtime/functions/turn/app"
	"github.com/commonly/runtime/infra/awslocal/apigatewaylocal"
	"github.com/commonly/runtime/infra/awslocal/eventbridgelocal"
	"github.com/commonly/runtime/infra/localstack"
	"github.com/commonly/runtime/internal/dynamodblocal"
	"github.com/commonly/runtime/shared/httpwire"
	"github.com/commonly/runtime/shared/tracing"
)

// DefaultJWTSecret is the local signing secret when LOCAL_JWT_SECRET is
// unset. It is printed at start: local tokens protect nothing.
const DefaultJWTSecret = "commonly-local-dev-secret"

// DefaultReaperInterval is REAPER_INTERVAL when unset: the stack's
// schedule, rate(1 minute).
const DefaultReaperInterval = time.Minute

const usage = `usage: go run ./infra/local            serve the local stack on 127.0.0.1:$PORT (8080), with a demo turn
       go run ./infra/local token SUB  print a token for SUB ("token SUB admin": the service scope)

The environment chooses the rest (docs/local.md): PORT, LOCAL_JWT_SECRET,
LLM_BASE_URL and LLM_API_KEY (a real model instead of the offline one),
E2B_API_KEY (E2B instead of the local sandbox), COMMONLY_API_URL and
BROKER_URL (a real pod backend), TURN_DISPATCH=inline, EVENTS_FILE,
TRACES_FILE, REAPER_INTERVAL, DAILY_SPEND_CAP_USD, and every variable the
turn function reads (docs/operations.md).
`

func main() {
	if err := run(context.Background(), os.Args[1:], os.Getenv, os.Stdout); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return
		}
		fmt.Fprintln(os.Stderr, "local:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string, getenv func(string) string, out io.Writer) error {
	flags := flag.NewFlagSet("local", flag.ContinueOnError)
	flags.SetOutput(out)
	flags.Usage = func() { fmt.Fprint(out, usage) }
	if err := flags.Parse(args); err != nil {
		return err
	}
	secret := []byte(envOr(getenv, "LOCAL_JWT_SECRET", DefaultJWTSecret))
	if flags.Arg(0) == "token" {
		return printToken(flags.Args()[1:], secret, out)
	}
	if flags.NArg() > 0 {
		flags.Usage()
		return fmt.Errorf("unknown argument %q", flags.Arg(0))
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	getenv, dropTraces := tracesByDefault(getenv)
	defer dropTraces()

	logs := &heldWriter{w: os.Stderr}
	defer logs.release()
	log := slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelWarn}))
	env := localEnv(getenv)
	// The local pod backend and broker, unless real ones are named.
	pods := localstack.NewPods()
	pods.Add("demo-pod", "alice", "Can someone check the sum of the squares of 1 to 10 for the worksheet?")
	do, err := startDORuntime(env, pods)
	if err != nil {
		return err
	}
	defer do.close()
	events, err := openEventsFile(env["EVENTS_FILE"])
	if err != nil {
		return err
	}
	defer events.close()
	interval, err := parseInterval(env["REAPER_INTERVAL"])
	if err != nil {
		return err
	}
	tcfg, err := tracing.ConfigFromEnv(getenv, "commonly-local", nil)
	if err != nil {
		return err
	}
	// Nothing flushes here as a Lambda invocation does: a turn's spans
	// reach TRACES_FILE within half a second of its end.
	tcfg.ExportDelay = 500 * time.Millisecond
	traces, err := tracing.Setup(ctx, tcfg)
	if err != nil {
		return err
	}
	defer func() { _ = traces.Shutdown(context.Background()) }()
	tr := trace{traces, tcfg.File}

	// A line for each request served, once the demo's are done.
	access := &gatedWriter{w: &prefixLines{w: out, prefix: "  "}}
	st, err := localstack.Start(ctx, localstack.Config{
		Env: env, Functions: localstack.All, Pods: pods,
		DynamoDB:    dynamodblocal.Config{Addr: envOr(getenv, "LOCAL_DYNAMODB_ADDR", "127.0.0.1:0")},
		EventBridge: eventbridgelocal.Config{EventsFile: events.path, Out: &prefixLines{w: out, prefix: "  EventBridge <- "}},
		Log:         log, Tracing: traces,
		APIAddr: "127.0.0.1:" + envOr(getenv, "PORT", "8080"), JWTSecret: secret, AccessLog: access,
		ReaperEvery: interval, OnSweep: func(s localstack.Sweep) { printSweep(out, s) },
		Serve: func(st *localstack.Stack, gw http.Handler) (http.Handler, error) {
			return withConsole(st, gw, tr, secret)
		},
	})
	if err != nil {
		return err
	}
	defer st.Close()

	if err := banner(ctx, out, st, do, events, tr, secret); err != nil {
		return err
	}
	logs.release()
	base := st.APIURL
	if err := demo(ctx, base, secret, st.TurnConfig, st.Pods, tr, out); err != nil {
		fmt.Fprintln(out, "demo failed:", err)
	}
	fmt.Fprintf(out, "\nThe usage and cost report of this stack (docs/report.md), from another shell:\n  %s\n", reportCommand(st.Tables.State, dynamodblocal.AWSEnv(st.DynamoDBURL)))
	// On before the line that says so: a client that reads it may call
	// at once.
	access.on.Store(true)
	fmt.Fprintln(out, "\nServing; each request a line below. Ctrl-C to stop.")
	<-ctx.Done()
	fmt.Fprintln(out, "stopped")
	return nil
}

// localEnv is the process environment with the local stack's defaults
// (localstack.Defaults under it). The function itself runs the offline
// model and the local sandbox only when named (LLM_MODE, SANDBOX); the
// local stack names them when the real services are not configured.
func localEnv(getenv func(string) string) map[string]string {
	env := map[string]string{}
	for _, k := range []string{"STATE_TABLE", "RUNS_TABLE", "TURN_DISPATCH", "HOSTED_ENGINE", "PLAN_TURN_LIMITS", "INSTALL_CACHE_TTL",
		"DO_RUNTIME_URL", "DO_RUNTIME_TOKEN", "DO_RUNTIME_TIMEOUT", "LLM_MODE", "LLM_BASE_URL", "LLM_API_KEY", "LLM_MODEL", "LLM_TIMEOUT",
		"TURN_MAX_USD", "PRICE_TABLE_FILE", "BROKER_URL", "BROKER_TOKEN", "COMMONLY_API_URL", "SEARCH_PROVIDER", "SEARCH_API_KEY",
		"SEARCH_API_URL", "GITHUB_API_URL", "SANDBOX", "SANDBOX_MAX_CONCURRENT", "E2B_API_KEY", "E2B_DOMAIN", "E2B_API_URL", "E2B_SANDBOX_URL", "E2B_TEMPLATE",
		"AWS_LAMBDA_FUNCTION_NAME", "EVENT_BUS_NAME", "DAILY_SPEND_ALARM_USD", "EVENTS_FILE", "DAILY_SPEND_CAP_USD",
		"STAGE", "SANDBOX_LIFETIME", "REAPER_INTERVAL"} {
		if v := getenv(k); v != "" {
			env[k] = v
		}
	}
	if env["LLM_MODE"] == "" && env["LLM_BASE_URL"] == "" {
		env["LLM_MODE"] = app.LLMOffline
	}
	if env["SANDBOX"] == "" && env["E2B_API_KEY"] == "" {
		env["SANDBOX"] = app.SandboxLocal
	}
	return env
}

// parseInterval reads REAPER_INTERVAL: a duration or seconds, positive,
// at most a day.
func parseInterval(v string) (time.Duration, error) {
	return httpwire.ParseTimeout("REAPER_INTERVAL", v, DefaultReaperInterval, 24*time.Hour)
}

// eventsFile is where the alarm's EventBridge events go: EVENTS_FILE,
// kept, or a new file in the temporary directory, removed at stop.
type eventsFile struct {
	path    string
	created bool
}

func openEventsFile(path string) (*eventsFile, error) {
	if path != "" {
		return &eventsFile{path: path}, nil
	}
	f, err := os.CreateTemp("", "commonly-events-*.jsonl")
	if err != nil {
		return nil, fmt.Errorf("events file: %w", err)
	}
	_ = f.Close()
	return &eventsFile{path: f.Name(), created: true}, nil
}

func (e *eventsFile) close() {
	if e.created {
		_ = os.Remove(e.path)
	}
}

func envOr(getenv func(string) string, k, def string) string {
	if v := getenv(k); v != "" {
		return v
	}
	return def
}

func printToken(args []string, secret []byte, out io.Writer) error {
	if len(args) == 0 {
		return errors.New("usage: local token SUB [admin]")
	}
	var tok string
	var err error
	if len(args) > 1 && args[1] == "admin" {
		tok, err = apigatewaylocal.MintServiceToken(secret, args[0], time.Now())
	} else {
		tok, err = apigatewaylocal.MintToken(secret, args[0], nil, 24*time.Hour, time.Now())
	}
	if err != nil {
		return err
	}
	fmt.Fprintln(out, tok)
	return nil
}
