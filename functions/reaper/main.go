// Command reaper is the reaper Lambda function: every minute (an
// EventBridge schedule) it kills the sandboxes past their lifetime and
// closes the runs their workers abandoned (shared/reaper).
package main

import (
	"context"
	"log/slog"
	"os"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-lambda-go/lambdacontext"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	lambdasvc "github.com/aws/aws-sdk-go-v2/service/lambda"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"

	"github.com/commonly/runtime/functions/reaper/app"
	"github.com/commonly/runtime/functions/reaper/handler"
	"github.com/commonly/runtime/shared/gomaxprocs"
	"github.com/commonly/runtime/shared/metrics"
	"github.com/commonly/runtime/shared/secrets"
	"github.com/commonly/runtime/shared/tracing"
)

func main() {
	// A sweep waits on I/O (bounded kills in flight): one P.
	gomaxprocs.Sequential(os.Getenv)
	log := lambdacontext.NewLogger()
	slog.SetDefault(log)
	h, err := setup(context.Background(), log)
	if err != nil {
		// A misconfigured reaper must not report sweeps it did not make:
		// fail the init phase (the schedule's failure alarm fires).
		log.Error("reaper function cannot start", "err", err)
		os.Exit(1)
	}
	lambda.Start(h)
}

// setup loads the configuration and builds the clients once per container.
func setup(ctx context.Context, log *slog.Logger) (func(context.Context, events.EventBridgeEvent) (handler.Result, error), error) {
	awsCfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		return nil, err
	}
	// In AWS the E2B key comes as E2B_API_KEY_SECRET_ARN, read here once.
	getenv, err := secrets.Resolve(ctx, os.Getenv, secretsmanager.NewFromConfig(awsCfg), "E2B_API_KEY")
	if err != nil {
		return nil, err
	}
	cfg, err := app.LoadConfig(getenv)
	if err != nil {
		return nil, err
	}
	// EMF lines on stdout become CloudWatch metrics.
	emf, err := metrics.New(metrics.Config{Writer: os.Stdout})
	if err != nil {
		return nil, err
	}
	// Traces, if configured, with DynamoDB calls as client spans.
	tp, err := tracing.ForFunction(ctx, getenv, "commonly-reaper", &awsCfg)
	if err != nil {
		return nil, err
	}
	built, err := app.Build(cfg, app.Deps{Dynamo: dynamodb.NewFromConfig(awsCfg), Lambda: lambdasvc.NewFromConfig(awsCfg), Log: log, Metrics: emf})
	if err != nil {
		return nil, err
	}
	return tracing.WithFlush(tp, log, built.Handler.Handle), nil
}
