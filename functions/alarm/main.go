// Command alarm is the alarm Lambda function: it consumes the runs
// table's stream, totals each user's cost per UTC day in the ledger and
// raises the spend alarm on EventBridge.
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
	"github.com/aws/aws-sdk-go-v2/service/eventbridge"

	"github.com/commonly/runtime/functions/alarm/app"
	"github.com/commonly/runtime/shared/gomaxprocs"
	"github.com/commonly/runtime/shared/metrics"
	"github.com/commonly/runtime/shared/tracing"
)

func main() {
	// One batch at a time, its user-days written in turn: one P.
	gomaxprocs.Sequential(os.Getenv)
	log := lambdacontext.NewLogger()
	slog.SetDefault(log)
	h, err := setup(context.Background(), log)
	if err != nil {
		// A misconfigured function must not consume the stream: fail the
		// init phase, and the records wait in the shard.
		log.Error("alarm function cannot start", "err", err)
		os.Exit(1)
	}
	lambda.Start(h)
}

// setup loads the configuration and builds the clients once per container.
func setup(ctx context.Context, log *slog.Logger) (func(context.Context, events.DynamoDBEvent) (events.DynamoDBEventResponse, error), error) {
	cfg, err := app.LoadConfig(os.Getenv)
	if err != nil {
		return nil, err
	}
	awsCfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		return nil, err
	}
	// EMF lines on stdout become CloudWatch metrics.
	emf, err := metrics.New(metrics.Config{Writer: os.Stdout})
	if err != nil {
		return nil, err
	}
	// Traces, if configured, with DynamoDB and EventBridge calls as client spans.
	tp, err := tracing.ForFunction(ctx, os.Getenv, "commonly-alarm", &awsCfg)
	if err != nil {
		return nil, err
	}
	h, err := app.Build(cfg, app.Deps{
		Dynamo:      dynamodb.NewFromConfig(awsCfg),
		EventBridge: eventbridge.NewFromConfig(awsCfg),
		Log:         log,
		Metrics:     emf,
	})
	if err != nil {
		return nil, err
	}
	return tracing.WithFlush(tp, log, h.Handle), nil
}
