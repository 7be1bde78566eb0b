// Command plans moves users' plans from their old key (USER#<userId>,
// PLAN) to a partition of their own (PLAN#<userId>, PLAN), where the
// turn function reads them since plans left their users' partitions
// (so IAM can keep the alarm's role, which writes users' days and
// ledgers, from writing a plan). `make migrate-plans`: STATE_TABLE (the
// stack's StateTableName output; AWS_ENDPOINT_URL_DYNAMODB for the local
// stack, the usual AWS credentials for a stage); KEEP_OLD=1 copies
// without deleting the old items (before a deploy). Idempotent: run it
// again until it reports nothing left. docs/operations.md says when.
package main

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/commonly/runtime/shared/retry"
)

func main() {
	if err := run(context.Background()); err != nil {
		fmt.Fprintln(os.Stderr, "migrate-plans:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context) error {
	table := os.Getenv("STATE_TABLE")
	if table == "" {
		return fmt.Errorf("STATE_TABLE is not set (the stack's StateTableName output)")
	}
	keepOld := false
	switch v := os.Getenv("KEEP_OLD"); v {
	case "", "0":
	case "1":
		keepOld = true
	default:
		return fmt.Errorf("KEEP_OLD=%q: want 1 or nothing", v)
	}
	awsCfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		return fmt.Errorf("aws config: %w", err)
	}
	c, err := Migrate(ctx, dynamodb.NewFromConfig(awsCfg), Options{
		Table: table, KeepOld: keepOld,
		Backoff: retry.Backoff{Base: 20 * time.Millisecond, Max: time.Second},
	})
	fmt.Printf("%s: %s\n", table, c)
	return err
}
