package store

import (
	"context"
	"errors"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/commonly/runtime/shared/turns"
)

// maxConflictRetries bounds retries of a transaction cancelled by a
// concurrent transaction on the same counter. Past it the turn is refused
// (fail closed) rather than admitted unchecked.
const maxConflictRetries = 12

// transact runs a transaction, retrying it while it is cancelled only by
// concurrent transactions on the same items. Other cancellations are
// returned as they are.
func (d *Dynamo) transact(ctx context.Context, items []types.TransactWriteItem) error {
	return d.retryConflicts(ctx, func() error {
		_, err := d.db.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: items})
		return err
	}, func(err error) bool {
		var tce *types.TransactionCanceledException
		return errors.As(err, &tce) && conflict(tce.CancellationReasons) && !anyConditionFailed(tce.CancellationReasons)
	})
}

// retryConflicts runs write until it succeeds or fails for a reason busy
// does not claim: a concurrent transaction on the same items, which
// DynamoDB does not retry itself. Between tries it waits with full
// jitter (d.conflicts), so that concurrent writers of one user spread
// out, and stops as soon as ctx is done; past maxConflictRetries it gives
// up as unavailable.
func (d *Dynamo) retryConflicts(ctx context.Context, write func() error, busy func(error) bool) error {
	for attempt := 0; ; attempt++ {
		err := write()
		if err == nil || !busy(err) {
			return err
		}
		if attempt >= maxConflictRetries {
			return fmt.Errorf("transaction conflicts after %d attempts: %w", attempt+1, turns.ErrUnavailable)
		}
		if err := d.conflicts.Wait(ctx, attempt); err != nil {
			return err
		}
	}
}

func anyConditionFailed(reasons []types.CancellationReason) bool {
	for i := range reasons {
		if failedCondition(reasons, i) {
			return true
		}
	}
	return false
}

func failedCondition(reasons []types.CancellationReason, i int) bool {
	return i < len(reasons) && aws.ToString(reasons[i].Code) == "ConditionalCheckFailed"
}

func conflict(reasons []types.CancellationReason) bool {
	for _, r := range reasons {
		switch aws.ToString(r.Code) {
		case "TransactionConflict", "ThrottlingError", "ProvisionedThroughputExceeded":
			return true
		}
	}
	return false
}

func reasonCodes(reasons []types.CancellationReason) string {
	s := ""
	for i, r := range reasons {
		if i > 0 {
			s += ","
		}
		s += aws.ToString(r.Code)
	}
	return s
}
