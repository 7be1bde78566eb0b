// Command turnproc is the turn process of `make bench`: the local stack
// as `make run` serves it (the turn function behind the local API Gateway
// with its JWT authorizer, inline dispatch, the real SDK client reaching
// DynamoDB through AWS_ENDPOINT_URL_DYNAMODB), with the benchmark's
// no-op tool, a scripted model, and a DynamoDB call counter. The driver
// runs it as a child process, so that its CPU and peak RSS are the turn
// process's own, and serves the DynamoDB (internal/dynamodblocal) it
// reaches at -dynamo.
//
//	turnproc -llm URL -dynamo URL [-log warn|info] [-floor N] [-otlp URL [-trace-ratio R]]
//
// With -otlp URL every turn is traced and its spans exported there after
// each response, the next request starting once they are out, as the
// traces extension does in Lambda (tracing.ExportAfterResponse;
// benchdriver -tracing-cost). With -export-before-response too, each
// request exports before it answers instead, as a function without the
// extension does.
// With -shapes the native engine also offers the context tool of the
// turn shapes (bench/internal/shapes), and each -env KEY=VALUE adds to
// the turn function's environment (the stand-ins' URLs and keys): the
// turns users send, for make memsize (bench/cmd/turnshapes).
// With -floor N it serves the benchmark's floor instead of the turn
// function (bench/internal/floor): each API request makes the script's
// model calls and N DynamoDB calls with a bare HTTP client, nothing else.
//
// Like the turn function it runs with GOMAXPROCS 1 unless the variable is
// set (shared/gomaxprocs); GOMAXPROCS=2 measures Go's default here.
//
// It prints one JSON line, {"api":URL,"stats":URL}, when it serves, and
// stops on SIGTERM. GET {stats}/stats reports its DynamoDB calls, CPU
// time and peak RSS; it is served on a listener of its own, outside the
// API.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"os"
	"os/signal"
	"runtime/pprof"
	"strings"
	"syscall"
	"time"

	"github.com/commonly/runtime/bench/internal/floor"
	"github.com/commonly/runtime/bench/internal/procstat"
	"github.com/commonly/runtime/bench/internal/script"
	"github.com/commonly/runtime/bench/internal/shapes"
	"github.com/commonly/runtime/bench/internal/turnstack"
	"github.com/commonly/runtime/functions/turn/app"
	"github.com/commonly/runtime/infra/localstack"
	"github.com/commonly/runtime/shared/gomaxprocs"
	"github.com/commonly/runtime/shared/tracing"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "turnproc:", err)
		os.Exit(1)
	}
}

func run() error {
	// As the turn function's main does (GOMAXPROCS in the environment wins).
	gomaxprocs.Sequential(os.Getenv)
	llmURL := flag.String("llm", "", "base URL of the scripted chat-completions server")
	dynamoURL := flag.String("dynamo", "", "DynamoDB endpoint (required)")
	level := flag.String("log", "warn", "log level: warn (the local stack's) or info (Lambda's default)")
	cpuProfile := flag.String("cpuprofile", "", "write a CPU profile of the whole run to this file")
	memProfile := flag.String("memprofile", "", "write an allocation profile to this file at exit")
	floorCalls := flag.Int("floor", -1, "serve the floor instead of the turn: the script's model calls and this many DynamoDB calls per request")
	otlpURL := flag.String("otlp", "", "trace every turn and export its spans to this OTLP/HTTP traces URL after each response, the next request starting once they are out (the traces extension in Lambda)")
	exportBefore := flag.Bool("export-before-response", false, "with -otlp, export each request's spans before it answers (a function without the traces extension)")
	ratio := flag.Float64("trace-ratio", 1, "with -otlp, the share of turns that did not fail whose spans are exported (TRACES_SAMPLE_RATIO; the stack's default is 0.05)")
	withShapes := flag.Bool("shapes", false, "offer the turn shapes' context tool too (bench/internal/shapes)")
	env := envFlag{}
	flag.Var(env, "env", "KEY=VALUE added to the turn function's environment (repeatable)")
	flag.Parse()
	if *llmURL == "" {
		return errors.New("-llm is required")
	}
	if *dynamoURL == "" {
		return errors.New("-dynamo is required")
	}
	var lvl slog.Level
	if err := lvl.UnmarshalText([]byte(*level)); err != nil {
		return fmt.Errorf("-log: %w", err)
	}
	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err != nil {
			return err
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}
	if *memProfile != "" {
		defer func() {
			if f, err := os.Create(*memProfile); err == nil {
				_ = pprof.Lookup("allocs").WriteTo(f, 0)
				f.Close()
			}
		}()
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	log := slog.New(slog.NewJSONHandler(os.Stderr, &slog.HandlerOptions{Level: lvl}))
	var apiURL string
	calls := func() localstack.Calls { return localstack.Calls{} }
	if *floorCalls >= 0 {
		f := &floor.Handler{
			LLM: *llmURL, Dynamo: *dynamoURL, Table: turnstack.Tables.State, Model: turnstack.Model,
			ModelCalls: script.Steps, DynamoCalls: *floorCalls, HTTP: &http.Client{},
		}
		f.Init()
		srv, url, err := serve(f)
		if err != nil {
			return err
		}
		defer shutdown(srv)
		apiURL = url
	} else {
		tp, err := tracing.Setup(ctx, tracing.Config{ServiceName: "commonly-turn", OTLP: otlpOf(*otlpURL), SampleRatio: *ratio})
		if err != nil {
			return err
		}
		defer func() { _ = tp.Shutdown(context.WithoutCancel(ctx)) }()
		if !*exportBefore {
			if err := tp.ExportAfterResponse(log); err != nil {
				return err
			}
		}
		// The local stack's turn function on the driver's DynamoDB and
		// scripted model, its spans flushed after each response as the
		// function's main wires it (tracing.WithFlush).
		// With -shapes, the turn shapes' context tool is offered too.
		vars := map[string]string{"LLM_BASE_URL": *llmURL}
		maps.Copy(vars, env)
		opts := turnstack.Options()
		if *withShapes {
			opts = append(opts, app.WithTools(shapes.ContextTool{}))
		}
		st, err := localstack.Start(ctx, localstack.Config{
			Env: turnstack.Env(vars), Functions: []localstack.Function{localstack.Turn},
			DynamoDBURL: *dynamoURL, TurnOptions: opts, Count: true, Log: log, Tracing: tp,
			JWTSecret: []byte(turnstack.Secret),
			Serve: func(_ *localstack.Stack, gw http.Handler) (http.Handler, error) {
				return tracing.WithFlushHTTP(tp, log, gw), nil
			},
		})
		if err != nil {
			return err
		}
		defer st.Close()
		apiURL, calls = st.APIURL, st.Calls[localstack.Turn].Snapshot
	}
	// The stats on a listener of their own, outside the API.
	stats, statsURL, err := serve(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(turnstack.Stats{DynamoDB: calls(), Proc: procstat.Self()})
	}))
	if err != nil {
		return err
	}
	defer shutdown(stats)
	if err := json.NewEncoder(os.Stdout).Encode(map[string]string{"api": apiURL, "stats": statsURL}); err != nil {
		return err
	}
	<-ctx.Done()
	return nil
}

// serve serves h on a free loopback port.
func serve(h http.Handler) (*http.Server, string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, "", err
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	return srv, "http://" + ln.Addr().String(), nil
}

func shutdown(srv *http.Server) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = srv.Shutdown(ctx)
}

// otlpOf is the collector -otlp names; nil (tracing off) when empty.
func otlpOf(url string) *tracing.OTLP {
	if url == "" {
		return nil
	}
	return &tracing.OTLP{Endpoint: url}
}

// envFlag collects -env KEY=VALUE.
type envFlag map[string]string

func (e envFlag) String() string { return fmt.Sprint(map[string]string(e)) }

func (e envFlag) Set(v string) error {
	k, val, ok := strings.Cut(v, "=")
	if !ok || k == "" {
		return fmt.Errorf("%q is not KEY=VALUE", v)
	}
	e[k] = val
	return nil
}
