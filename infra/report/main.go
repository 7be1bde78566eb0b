// Command report writes the usage and cost report of a deployment (`make
// report`): it reads the cost ledgers' digests on the state table's
// report index through the AWS SDK (STATE_TABLE; AWS_ENDPOINT_URL_DYNAMODB
// for the local stack, the usual AWS credentials for a stage) for the UTC
// days FROM..TO (default the last 7), and writes REPORT_OUT (default
// bin/report/index.html) and the same figures as CSV beside it.
package main

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/commonly/runtime/infra/report/usage"
	"github.com/commonly/runtime/shared/store"
)

func main() {
	if err := run(context.Background()); err != nil {
		fmt.Fprintln(os.Stderr, "report:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context) error {
	cfg, err := usage.LoadConfig(os.Getenv, time.Now())
	if err != nil {
		return err
	}
	awsCfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		return fmt.Errorf("aws config: %w", err)
	}
	st, err := store.New(store.Config{DB: dynamodb.NewFromConfig(awsCfg), Tables: store.Tables{State: cfg.StateTable, Runs: os.Getenv("RUNS_TABLE")}})
	if err != nil {
		return err
	}
	started := time.Now()
	r, err := usage.Build(ctx, st, cfg)
	if err != nil {
		return err
	}
	page, csv, err := r.Write()
	if err != nil {
		return err
	}
	fmt.Printf("%s to %s: %d user-days, %d turns, %s, read in %s\n  %s\n  %s\n",
		cfg.From, cfg.To, r.Total.UserDays, r.Total.Turns, r.Total.Cost, time.Since(started).Round(time.Millisecond), page, csv)
	return nil
}
