// Command events is the events function: GET /v1/runs/{runId}/events,
// a run's events as Server-Sent Events, served through a Lambda function
// URL in RESPONSE_STREAM mode by aws-lambda-go's lambdaurl; the caller's
// JWT is checked here (docs/api.md, "Watching a run").
package main

import (
	"context"
	"log/slog"
	"net/http"
	"os"

	"github.com/aws/aws-lambda-go/lambdacontext"
	"github.com/aws/aws-lambda-go/lambdaurl"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/commonly/runtime/functions/events/app"
	"github.com/commonly/runtime/shared/gomaxprocs"
	"github.com/commonly/runtime/shared/tracing"
)

func main() {
	// A stream waits on DynamoDB reads: one P.
	gomaxprocs.Sequential(os.Getenv)
	log := lambdacontext.NewLogger()
	slog.SetDefault(log)
	h, err := setup(context.Background(), log)
	if err != nil {
		log.Error("events function cannot start", "err", err)
		os.Exit(1)
	}
	lambdaurl.Start(h)
}

// setup loads the configuration and builds the clients once per container.
func setup(ctx context.Context, log *slog.Logger) (http.Handler, error) {
	cfg, err := app.LoadConfig(os.Getenv)
	if err != nil {
		return nil, err
	}
	awsCfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		return nil, err
	}
	// Traces, if configured, with DynamoDB calls as client spans.
	tp, err := tracing.ForFunction(ctx, os.Getenv, "commonly-events", &awsCfg)
	if err != nil {
		return nil, err
	}
	v, err := app.NewOIDCVerifier(ctx, cfg.JWTIssuer, cfg.JWTAudience)
	if err != nil {
		return nil, err
	}
	h, err := app.Build(cfg, app.Deps{Dynamo: dynamodb.NewFromConfig(awsCfg), Verifier: v, Log: log})
	if err != nil {
		return nil, err
	}
	// The spans go before the environment freezes: after the stream.
	return tracing.WithFlushHTTP(tp, log, h), nil
}
