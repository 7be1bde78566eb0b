// Command turn is the turn Lambda function: the HTTP API (API Gateway
// HTTP API v2 events) and the asynchronous turn dispatches.
package main

import (
	"context"
	"encoding/json"
	"log/slog"
	"os"

	lambdastart "github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-lambda-go/lambdacontext"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"

	"github.com/commonly/runtime/functions/turn/app"
	"github.com/commonly/runtime/shared/gomaxprocs"
	"github.com/commonly/runtime/shared/metrics"
	"github.com/commonly/runtime/shared/secrets"
	"github.com/commonly/runtime/shared/tracing"
)

func main() {
	// One invocation at a time, one sequential flow of I/O: one P.
	gomaxprocs.Sequential(os.Getenv)
	log := lambdacontext.NewLogger()
	slog.SetDefault(log)
	h, err := setup(context.Background(), log)
	if err != nil {
		// A misconfigured function must not serve: fail the init phase.
		log.Error("turn function cannot start", "err", err)
		os.Exit(1)
	}
	lambdastart.Start(h)
}

// setup loads the configuration and builds the clients once per container.
func setup(ctx context.Context, log *slog.Logger) (func(context.Context, json.RawMessage) (any, error), error) {
	awsCfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		return nil, err
	}
	// In AWS each secret comes as X_SECRET_ARN, read here once.
	getenv, err := secrets.Resolve(ctx, os.Getenv, secretsmanager.NewFromConfig(awsCfg), secrets.Names...)
	if err != nil {
		return nil, err
	}
	cfg, err := app.LoadConfig(getenv)
	if err != nil {
		return nil, err
	}
	// Traces, if configured, with DynamoDB and Lambda calls as client spans.
	tp, err := tracing.ForFunction(ctx, getenv, "commonly-turn", &awsCfg)
	if err != nil {
		return nil, err
	}
	// EMF lines on stdout become CloudWatch metrics.
	emf, err := metrics.New(metrics.Config{Writer: os.Stdout})
	if err != nil {
		return nil, err
	}
	built, err := app.Build(ctx, cfg, app.Deps{
		Dynamo:  dynamodb.NewFromConfig(awsCfg),
		Lambda:  lambda.NewFromConfig(awsCfg),
		Log:     log,
		Metrics: emf,
		Tracing: tp,
	})
	if err != nil {
		return nil, err
	}
	return tracing.WithFlush(tp, log, built.Handler.Invoke), nil
}
