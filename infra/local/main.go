// Command local runs the whole turn stack on one machine: an embedded
// DynamoDB-compatible server, the turn function behind a local API
// Gateway (HTTP API v2 events, HS256 JWT authorizer), its turns
// dispatched asynchronously through a local Lambda as in AWS, and a demo
// install and turn. No cloud account, no Docker.
//
//	go run ./infra/local            # serve on 127.0.0.1:8080
//	go run ./infra/local token SUB  # print a token for SUB (add "admin" for the service scope)
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge"

	"github.com/commonly/runtime/api"
	"github.com/commonly/runtime/functions/turn/app"
	"github.com/commonly/runtime/infra/awslocal/apigatewaylocal"
	"github.com/commonly/runtime/infra/awslocal/lambdalocal"
	"github.com/commonly/runtime/internal/dynamodblocal"
	"github.com/commonly/runtime/shared/sandbox/local"
	"github.com/commonly/runtime/shared/tracing"
)

// DefaultJWTSecret is the local signing secret when LOCAL_JWT_SECRET is
// unset. It is printed at start: local tokens protect nothing.
const DefaultJWTSecret = "commonly-local-dev-secret"

func main() {
	if err := run(context.Background(), os.Args[1:], os.Getenv, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "local:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string, getenv func(string) string, out *os.File) error {
	secret := []byte(envOr(getenv, "LOCAL_JWT_SECRET", DefaultJWTSecret))
	if len(args) > 0 && args[0] == "token" {
		return printToken(args[1:], secret, out)
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	getenv, dropTraces := tracesByDefault(getenv)
	defer dropTraces()

	log := slog.New(slog.NewJSONHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	env := localEnv(getenv)
	pods, stopPods, err := startPods(env)
	if err != nil {
		return err
	}
	defer stopPods()
	do, err := startDORuntime(env, pods)
	if err != nil {
		return err
	}
	defer do.close()
	cfg, err := app.LoadConfig(func(k string) string { return env[k] })
	if err != nil {
		return fmt.Errorf("config: %w", err)
	}
	st, err := startStack(ctx, getenv, env, cfg, log, out)
	if err != nil {
		return err
	}
	defer st.close()

	addr := "127.0.0.1:" + envOr(getenv, "PORT", "8080")
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("listen %s: %w", addr, err)
	}
	events, err := eventsHandler(st.ddb, cfg.Tables, secret, log)
	if err != nil {
		return err
	}
	gw := &apigatewaylocal.Gateway{Secret: secret, Invoke: st.turn.Handler.HandleHTTP, Events: events, Log: log}
	page, err := withConsole(gw, st, cfg, secret)
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: page, ReadHeaderTimeout: 10 * time.Second}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	base := "http://" + ln.Addr().String()

	fmt.Fprintf(out, "Commonly turn runtime, local stack\n  API:        %s\n  OpenAPI:    %s (the API's contract, no token needed)\n  console:    %s\n  DynamoDB:   %s (embedded)%s\n  alarm:      %s\n  reaper:     %s\n  dispatch:   %s\n  durable object runtime: %s\n  model:      %s\n  sandbox:    %s\n  pods:       %s\n  JWT secret: %q (HS256; set LOCAL_JWT_SECRET to change)\n\n",
		base, base+api.Path, consoleLabel(base, st), st.db.URL, tablesLabel(st.tables), st.alarm.label(), st.reaper.label(), dispatchLabel(cfg, st.lambda), do.label(env), modelLabel(cfg), sandboxLabel(cfg), podsLabel(cfg, pods), secret)
	if err := demo(ctx, base, secret, cfg, pods, st, out); err != nil {
		fmt.Fprintln(out, "demo failed:", err)
	}
	fmt.Fprintf(out, "\nThe usage and cost report of this stack (docs/report.md), from another shell:\n  %s\n", reportCommand(cfg.Tables.State, st.db.AWSEnv()))
	fmt.Fprintln(out, "\nServing; Ctrl-C to stop.")

	select {
	case <-ctx.Done():
	case err := <-errc:
		if !errors.Is(err, http.ErrServerClosed) {
			return err
		}
	}
	shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return srv.Shutdown(shutdown)
}

// startPods starts the local pod backend and broker when no real ones
// are configured, and points env at it; pods is nil otherwise.
func startPods(env map[string]string) (pods *backend, stop func(), err error) {
	if env["COMMONLY_API_URL"] != "" || env["BROKER_URL"] != "" {
		return nil, func() {}, nil
	}
	pods = newBackend()
	url, srv, err := pods.serve()
	if err != nil {
		return nil, nil, fmt.Errorf("local pod backend: %w", err)
	}
	env["COMMONLY_API_URL"], env["BROKER_URL"], env["BROKER_TOKEN"] = url, url, pods.serviceToken
	pods.add("demo-pod", "alice", "Can someone check the sum of the squares of 1 to 10 for the worksheet?")
	return pods, func() { _ = srv.Close() }, nil
}

// stack is the local AWS (infra/awslocal) with the three functions wired
// on it: the turn function's handler, the alarm function on the runs
// stream, the reaper on a ticker.
type stack struct {
	db     *dynamodblocal.Server
	tables []dynamodblocal.TableInfo
	alarm  *localAlarm
	reaper *localReaper
	turn   *app.Built
	lambda *lambdalocal.Server // nil with TURN_DISPATCH=inline
	ddb    *dynamodb.Client
	// traces is the tracer provider (TRACES_FILE, OTEL_*), traceFile
	// where it writes.
	traces    *tracing.Provider
	traceFile string
}

// startStack starts the embedded DynamoDB and the EventBridge stand-in,
// points the SDK's default configuration at them, and wires the
// functions with the real SDK clients.
func startStack(ctx context.Context, getenv func(string) string, env map[string]string, cfg app.Config, log *slog.Logger, out io.Writer) (st *stack, err error) {
	st = &stack{}
	defer func() {
		if err != nil {
			st.close()
		}
	}()
	if st.db, err = dynamodblocal.StartWithTables(ctx, envOr(getenv, "LOCAL_DYNAMODB_ADDR", "127.0.0.1:0"), cfg.Tables); err != nil {
		return st, err
	}
	if st.tables, err = st.db.Describe(ctx, cfg.Tables.State, cfg.Tables.Runs); err != nil {
		return st, err
	}
	if st.alarm, err = startAlarmBus(env, out); err != nil {
		return st, err
	}
	// The real SDK client, pointed at the embedded server through the
	// standard endpoint variable, exactly as it would be at any endpoint.
	// The region and dummy credentials only where unset.
	for k, v := range st.db.AWSEnv() {
		if k == dynamodblocal.EndpointVar || os.Getenv(k) == "" {
			os.Setenv(k, v)
		}
	}
	awsCfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		return st, fmt.Errorf("aws config: %w", err)
	}
	tcfg, err := tracing.ConfigFromEnv(getenv, "commonly-local", nil)
	if err != nil {
		return st, err
	}
	if st.traces, err = tracing.Setup(ctx, tcfg); err != nil {
		return st, err
	}
	st.traceFile = tcfg.File
	if st.traces.Enabled() {
		tracing.InstrumentAWS(&awsCfg)
	}
	ddb := dynamodb.NewFromConfig(awsCfg)
	st.ddb = ddb
	// One local provider for the turns and the reaper: its sessions live
	// in this process.
	var box *local.Provider
	if cfg.Sandbox == app.SandboxLocal {
		box = local.New(local.Config{})
	}
	if st.turn, st.lambda, err = buildTurn(ctx, cfg, app.Deps{Dynamo: ddb, Log: log, LocalSandbox: box, Tracing: st.traces}); err != nil {
		return st, err
	}
	if err := st.alarm.subscribe(ctx, st.db, ddb, eventbridge.NewFromConfig(awsCfg), cfg.Tables.Runs, log, nil); err != nil {
		return st, fmt.Errorf("alarm function: %w", err)
	}
	if st.reaper, err = newLocalReaper(env, ddb, box, log, time.Now, out); err != nil {
		return st, fmt.Errorf("reaper function: %w", err)
	}
	st.reaper.start(ctx)
	return st, nil
}

// close stops what startStack started, the functions first.
func (st *stack) close() {
	if st.lambda != nil {
		_ = st.lambda.Close()
	}
	if st.reaper != nil {
		st.reaper.close()
	}
	if st.alarm != nil {
		st.alarm.close()
	}
	if st.db != nil {
		_ = st.db.Close()
	}
	if st.traces != nil {
		_ = st.traces.Shutdown(context.Background())
	}
}

// localEnv is the process environment with the local stack's defaults.
// The function itself runs the offline model and the local sandbox only
// when named (LLM_MODE, SANDBOX); the local stack names them when the
// real services are not configured.
func localEnv(getenv func(string) string) map[string]string {
	env := map[string]string{
		"STATE_TABLE": "commonly-state", "RUNS_TABLE": "commonly-runs", "TURN_DISPATCH": app.DispatchLambda,
		"AWS_LAMBDA_FUNCTION_NAME": localFunctionName, "EVENT_BUS_NAME": "commonly-local", "STAGE": "local",
	}
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

// tablesLabel is a line per table: its stream and TTL, as the embedded
// server reports them.
func tablesLabel(tables []dynamodblocal.TableInfo) string {
	var b strings.Builder
	for _, t := range tables {
		b.WriteString("\n              " + t.String())
	}
	return b.String()
}

func modelLabel(cfg app.Config) string {
	if cfg.LLMMode == app.LLMOffline {
		return "offline model (LLM_MODE=offline, as no LLM_BASE_URL is set): deterministic, in-process"
	}
	return cfg.LLMModel + " at " + cfg.LLMBaseURL
}

func sandboxLabel(cfg app.Config) string {
	if cfg.Sandbox == app.SandboxE2B {
		return "E2B at " + cfg.E2BDomain
	}
	return "local bubblewrap sandbox (SANDBOX=local, as no E2B_API_KEY is set): no network, no environment, read-only root"
}

func podsLabel(cfg app.Config, pods *backend) string {
	if pods != nil {
		return "local in-memory pod backend and broker at " + cfg.CommonlyAPIURL + " (no COMMONLY_API_URL/BROKER_URL)"
	}
	return cfg.CommonlyAPIURL + " (broker " + cfg.BrokerURL + ")"
}

func envOr(getenv func(string) string, k, def string) string {
	if v := getenv(k); v != "" {
		return v
	}
	return def
}

func printToken(args []string, secret []byte, out *os.File) error {
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
