package bench

import (
	"context"
	"io"
	"log/slog"
	"testing"

	"github.com/commonly/runtime/bench/internal/script"
	"github.com/commonly/runtime/bench/internal/turnstack"
	"github.com/commonly/runtime/infra/localstack"
	"github.com/commonly/runtime/shared/tracing"
)

// rig is the local stack in one process (infra/localstack): the embedded
// DynamoDB, the scripted model, the turn function behind the local API
// Gateway, and a client holding a keep-alive connection to it.
type rig struct {
	st      *localstack.Stack
	counter *localstack.Counter
	model   *script.Server
	client  *turnstack.Client
}

// newRig starts the stack; level is the turn function's log level (the
// local stack logs warnings and errors, Lambda's default logger info),
// env adds to the benchmark's configuration.
func newRig(tb testing.TB, level slog.Level, env map[string]string) *rig {
	tb.Helper()
	return newRigWith(tb, level, env, nil)
}

// newTracedRig is newRig with tracing on: the stack gives the turn
// function tp and instruments its DynamoDB client, as each function's
// main wires them.
func newTracedRig(tb testing.TB, level slog.Level, tp *tracing.Provider) *rig {
	tb.Helper()
	return newRigWith(tb, level, nil, tp)
}

func newRigWith(tb testing.TB, level slog.Level, env map[string]string, tp *tracing.Provider) *rig {
	tb.Helper()
	ctx := context.Background()
	r := &rig{model: &script.Server{}}
	st, err := localstack.Start(ctx, localstack.Config{
		Env: turnstack.Env(env), Functions: []localstack.Function{localstack.Turn}, Model: r.model,
		TurnOptions: turnstack.Options(), Count: true, Tracing: tp, JWTSecret: []byte(turnstack.Secret),
		Log: slog.New(slog.NewJSONHandler(io.Discard, &slog.HandlerOptions{Level: level})),
	})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(st.Close)
	r.st, r.counter = st, st.Calls[localstack.Turn]
	if r.client, err = turnstack.NewClient(st.APIURL); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(r.client.HTTP.CloseIdleConnections)
	if err := r.client.CreateInstall(ctx); err != nil {
		tb.Fatal(err)
	}
	return r
}
