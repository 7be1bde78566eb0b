package bench

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/commonly/runtime/bench/internal/procstat"
	"github.com/commonly/runtime/bench/internal/turnstack"
	"github.com/commonly/runtime/infra/awslocal/apigatewaylocal"
)

// warmTurns are run before measuring: the first turns fill the install
// caches, the connection pools and the runtime's own caches.
const warmTurns = 3

// BenchmarkTurn is one scripted turn (3 model calls, 2 no-op tool calls)
// on the whole local turn path, everything in this process:
//
//   - api: through the local API Gateway over loopback HTTP/1.1
//     keep-alive, JWT authorizer included, as `make run` serves it;
//   - handler: the same turn given to handler.HandleHTTP as the API
//     Gateway event Lambda receives (no HTTP, no token check);
//   - api-info-log: api with info-level JSON logs (Lambda's default
//     level; the local stack logs warnings only), written to io.Discard;
//   - api-no-install-cache: api with INSTALL_CACHE_TTL=0 (the default is
//     30 s): the install is read on every turn, by the service with the
//     plan and again by the worker;
//   - api-spend-cap: api with DAILY_SPEND_CAP_USD set (high enough never
//     to refuse): each turn reserves at admission, every model call is
//     sized to the reservation, and the final write settles it;
//   - api-traced: api with tracing on and every turn sampled
//     (TRACES_SAMPLE_RATIO=1), its DynamoDB client instrumented (tracing.InstrumentAWSOptions),
//     each turn's spans exported over OTLP/HTTP to a loopback collector
//     that discards them, flushed after each turn as Lambda's invocation
//     does (docs/benchmarks.md, "What tracing costs").
//
// Besides time and allocations (of the whole process: client, gateway,
// scripted model and embedded DynamoDB included) it reports
// ddb-calls/op, counted by an SDK middleware on the store's client,
// model-calls/op, and proc-cpu-ms/op, this process's CPU per turn.
func BenchmarkTurn(b *testing.B) {
	b.Run("api", func(b *testing.B) { benchAPI(b, slog.LevelWarn, nil) })
	b.Run("handler", benchHandler)
	b.Run("api-info-log", func(b *testing.B) { benchAPI(b, slog.LevelInfo, nil) })
	b.Run("api-no-install-cache", func(b *testing.B) { benchAPI(b, slog.LevelWarn, map[string]string{"INSTALL_CACHE_TTL": "0s"}) })
	b.Run("api-spend-cap", func(b *testing.B) { benchAPI(b, slog.LevelWarn, map[string]string{"DAILY_SPEND_CAP_USD": "1000000"}) })
	b.Run("api-traced", benchAPITraced)
}

func benchAPI(b *testing.B, level slog.Level, env map[string]string) {
	r := newRig(b, level, env)
	ctx := context.Background()
	measure(b, r, func() error { _, err := r.client.Turn(ctx); return err })
}

// BenchmarkTurnStoredRuns is Turn/api with 100 and with 10,000 runs stored
// before the first measured turn (copies of a real turn's run and
// idempotency record, turnstack.StoreCopies, with the warm-up turns): the
// embedded DynamoDB must answer a turn with 10,000 runs behind it as fast
// as a fresh one, as DynamoDB does. `benchstat -col /runs` sets the two
// side by side (docs/benchmarks.md, "A turn with 10,000 runs stored").
func BenchmarkTurnStoredRuns(b *testing.B) {
	for _, stored := range []int{100, 10_000} {
		b.Run(fmt.Sprintf("runs=%d", stored), func(b *testing.B) {
			r := newRig(b, slog.LevelWarn, nil)
			ctx := context.Background()
			done, err := r.client.Turn(ctx)
			if err != nil {
				b.Fatal(err)
			}
			if err := turnstack.StoreCopies(ctx, r.st.Dynamo(), turnstack.Tables, done, stored-1-warmTurns); err != nil {
				b.Fatal(err)
			}
			measure(b, r, func() error { _, err := r.client.Turn(ctx); return err })
		})
	}
}

func benchHandler(b *testing.B) {
	r := newRig(b, slog.LevelWarn, nil)
	ctx := context.Background()
	measure(b, r, func() error {
		resp := r.st.Turn.Handler.HandleHTTP(ctx, turnEvent(r.client.NewIdempotencyKey()))
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("turn: %d %s", resp.StatusCode, resp.Body)
		}
		_, err := turnstack.CheckRun([]byte(resp.Body))
		return err
	})
}

// measure runs turn b.N times after the warm-up and reports the custom
// metrics. Every turn's records stay stored, as in DynamoDB.
func measure(b *testing.B, r *rig, turn func() error) {
	one := func() time.Duration {
		cpu0, _ := procstat.CPU()
		err := turn()
		cpu1, _ := procstat.CPU()
		if err != nil {
			b.Fatal(err)
		}
		return cpu1 - cpu0
	}
	for range warmTurns {
		one()
	}
	b.ReportAllocs()
	calls0, model0 := r.counter.Snapshot(), r.model.Counts()
	var cpu time.Duration
	n := 0
	for b.Loop() {
		cpu += one()
		n++
	}
	calls := r.counter.Snapshot().Sub(calls0)
	model := r.model.Counts()
	b.ReportMetric(float64(calls.Total())/float64(n), "ddb-calls/op")
	b.ReportMetric(float64(model.Requests-model0.Requests)/float64(n), "model-calls/op")
	b.ReportMetric(cpu.Seconds()*1e3/float64(n), "proc-cpu-ms/op")
	if model.Rejected != model0.Rejected {
		b.Fatalf("the scripted model rejected %d requests", model.Rejected-model0.Rejected)
	}
}

// turnEvent is the API Gateway event of one turn request, with the JWT
// authorizer's claims for the benchmark's user.
func turnEvent(idemKey string) events.APIGatewayV2HTTPRequest {
	now := time.Now()
	path := "/v1/installs/" + turnstack.InstallID + "/turns"
	return events.APIGatewayV2HTTPRequest{
		Version: "2.0", RouteKey: "POST /v1/installs/{installId}/turns", RawPath: path,
		Headers: map[string]string{
			"content-type": "application/json", "prefer": "wait=25", "idempotency-key": idemKey,
		},
		PathParameters: map[string]string{"installId": turnstack.InstallID},
		Body:           turnstack.TurnBody,
		RequestContext: events.APIGatewayV2HTTPRequestContext{
			AccountID: "000000000000", APIID: "local", Stage: "$default", RouteKey: "POST /v1/installs/{installId}/turns",
			RequestID: idemKey, TimeEpoch: now.UnixMilli(),
			HTTP: events.APIGatewayV2HTTPRequestContextHTTPDescription{Method: http.MethodPost, Path: path, Protocol: "HTTP/1.1", SourceIP: "127.0.0.1"},
			Authorizer: &events.APIGatewayV2HTTPRequestContextAuthorizerDescription{
				JWT: &events.APIGatewayV2HTTPRequestContextAuthorizerJWTDescription{Claims: map[string]string{
					"sub": turnstack.UserID, "iss": apigatewaylocal.Issuer, "aud": apigatewaylocal.Audience,
				}},
			},
		},
	}
}
