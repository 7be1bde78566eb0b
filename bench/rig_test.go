package bench

import (
	"context"
	"io"
	"log/slog"
	"net/http/httptest"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/commonly/runtime/bench/internal/script"
	"github.com/commonly/runtime/bench/internal/turnstack"
	"github.com/commonly/runtime/functions/turn/app"
	"github.com/commonly/runtime/infra/awslocal/apigatewaylocal"
	"github.com/commonly/runtime/internal/dynamodblocal"
	"github.com/commonly/runtime/shared/tracing"
)

// rig is the local stack in one process: the embedded DynamoDB, the
// scripted model, the turn function behind the local API Gateway, and a
// client holding a keep-alive connection to it.
type rig struct {
	built   *app.Built
	counter *turnstack.Counter
	model   *script.Server
	client  *turnstack.Client
	db      *dynamodblocal.Server
}

// newRig starts the stack; level is the turn function's log level (the
// local stack logs warnings and errors, Lambda's default logger info),
// env adds to the benchmark's configuration.
func newRig(tb testing.TB, level slog.Level, env map[string]string) *rig {
	tb.Helper()
	return newRigWith(tb, level, env, nil)
}

// newTracedRig is newRig with tracing on: the turn function gets tp, and
// its DynamoDB client the tracing package's AWS middleware, as each function's main wires
// them.
func newTracedRig(tb testing.TB, level slog.Level, tp *tracing.Provider) *rig {
	tb.Helper()
	return newRigWith(tb, level, nil, tp)
}

func newRigWith(tb testing.TB, level slog.Level, env map[string]string, tp *tracing.Provider) *rig {
	tb.Helper()
	ctx := context.Background()
	r := &rig{counter: turnstack.NewCounter(), model: &script.Server{}}
	llmSrv := httptest.NewServer(r.model)
	tb.Cleanup(llmSrv.Close)
	db, err := dynamodblocal.StartWithTables(ctx, "127.0.0.1:0", turnstack.Tables)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = db.Close() })
	r.db = db
	cfg, err := turnstack.Config(llmSrv.URL, env)
	if err != nil {
		tb.Fatal(err)
	}
	log := slog.New(slog.NewJSONHandler(io.Discard, &slog.HandlerOptions{Level: level}))
	opts := []func(*dynamodb.Options){r.counter.Option()}
	if tp.Enabled() {
		opts = append(opts, func(o *dynamodb.Options) { tracing.InstrumentAWSOptions(&o.APIOptions) })
	}
	r.built, err = turnstack.Build(ctx, cfg, app.Deps{Dynamo: db.Client(opts...), Log: log, Tracing: tp})
	if err != nil {
		tb.Fatal(err)
	}
	gw := &apigatewaylocal.Gateway{Secret: []byte(turnstack.Secret), Invoke: r.built.Handler.HandleHTTP, Log: log}
	api := httptest.NewServer(gw)
	tb.Cleanup(api.Close)
	if r.client, err = turnstack.NewClient(api.URL); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(r.client.HTTP.CloseIdleConnections)
	if err := r.client.CreateInstall(ctx); err != nil {
		tb.Fatal(err)
	}
	return r
}
