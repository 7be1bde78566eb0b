package main

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/commonly/runtime/shared/retry"
	"github.com/commonly/runtime/shared/tablekeys"
)

// DB is the part of the DynamoDB client the migration uses.
type DB interface {
	dynamodb.ScanAPIClient
	GetItem(ctx context.Context, in *dynamodb.GetItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error)
	PutItem(ctx context.Context, in *dynamodb.PutItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error)
	DeleteItem(ctx context.Context, in *dynamodb.DeleteItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error)
}

// attrUpdatedAt is the time shared/store's SetPlan writes on a plan
// (RFC 3339): of two copies of a plan, the later one wins.
const attrUpdatedAt = "updatedAt"

// Options are a run's settings.
type Options struct {
	// Table is the state table.
	Table string
	// KeepOld copies the plans without deleting the old items: run before
	// a deploy, so that the new code finds every plan where it reads.
	KeepOld bool
	// PageSize bounds the items a Scan page reads; 0 is DynamoDB's 1 MB page.
	PageSize int32
	// Backoff spaces out the retries of a write that met a transaction
	// (an admission's check of the plan) or a plan written meanwhile.
	Backoff retry.Backoff
}

// Counts is what a run did.
type Counts struct {
	// Found is the plans found at the old key.
	Found int
	// Copied is the plans written at the new key.
	Copied int
	// Kept is the plans the new key already held, as recent or more
	// (migrated before, or set since the deploy): the new key's stays.
	Kept int
	// Deleted is the old items deleted (none with KeepOld).
	Deleted int
}

func (c Counts) String() string {
	return fmt.Sprintf("%d plans at the old key: %d copied to the new key, %d already there (as recent or more), %d old items deleted",
		c.Found, c.Copied, c.Kept, c.Deleted)
}

// maxAttempts bounds the tries of one plan: each retry follows a write
// the migration met (a plan set meanwhile, a transaction on it).
const maxAttempts = 8

// errChanged is a write's condition that failed: the item changed since
// it was read; the plan is read again and tried again.
var errChanged = errors.New("changed since read")

// Migrate moves every user's plan from its old key (USER#<id>, PLAN) to
// its own partition (tablekeys.Plan). It is idempotent: a plan already
// moved is not found again, and one the new key holds already, as
// recent or more (by updatedAt; a tie keeps the new key's), is not
// overwritten. Each write is conditional on what was read, so a plan set
// meanwhile, at either key, is never lost: the later one wins.
func Migrate(ctx context.Context, db DB, o Options) (Counts, error) {
	var c Counts
	in := &dynamodb.ScanInput{
		TableName:                 aws.String(o.Table),
		ConsistentRead:            aws.Bool(true),
		FilterExpression:          aws.String("#sk = :sk AND begins_with(#pk, :user)"),
		ExpressionAttributeNames:  map[string]string{"#pk": tablekeys.PK, "#sk": tablekeys.SK},
		ExpressionAttributeValues: map[string]types.AttributeValue{":sk": str(tablekeys.LegacyPlan("").SK), ":user": str(tablekeys.LegacyPlan("").PK)},
	}
	if o.PageSize > 0 {
		in.Limit = aws.Int32(o.PageSize)
	}
	var failed []string
	for pages := dynamodb.NewScanPaginator(db, in); pages.HasMorePages(); {
		page, err := pages.NextPage(ctx)
		if err != nil {
			return c, fmt.Errorf("scan %s: %w", o.Table, err)
		}
		for _, item := range page.Items {
			user, ok := tablekeys.LegacyPlanUser(tablekeys.Key{PK: strOf(item, tablekeys.PK), SK: strOf(item, tablekeys.SK)})
			if !ok {
				continue
			}
			c.Found++
			if err := migrateOne(ctx, db, o, user, item, &c); err != nil {
				if ctx.Err() != nil {
					return c, err
				}
				failed = append(failed, fmt.Sprintf("%s: %v", user, err))
			}
		}
	}
	if len(failed) > 0 {
		sort.Strings(failed)
		return c, fmt.Errorf("%d plans not migrated (run again): %v", len(failed), failed)
	}
	return c, nil
}

// migrateOne moves one plan, old being the old item as read.
func migrateOne(ctx context.Context, db DB, o Options, user string, old map[string]types.AttributeValue, c *Counts) error {
	oldKey, newKey := key(tablekeys.LegacyPlan(user)), key(tablekeys.Plan(user))
	for attempt := 0; ; attempt++ {
		if attempt > 0 {
			if attempt >= maxAttempts {
				return fmt.Errorf("still changing after %d attempts", attempt)
			}
			if err := o.Backoff.Wait(ctx, attempt-1); err != nil {
				return err
			}
			// Read the old item again: it may have changed (or gone).
			out, err := db.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(o.Table), Key: oldKey, ConsistentRead: aws.Bool(true)})
			if err != nil {
				return fmt.Errorf("read old plan: %w", err)
			}
			if len(out.Item) == 0 {
				return nil // moved by another run
			}
			old = out.Item
		}
		copied, err := copyPlan(ctx, db, o.Table, old, newKey)
		if retryable(err) {
			continue
		}
		if err != nil {
			return err
		}
		if !o.KeepOld {
			err = deleteIfUnchanged(ctx, db, o.Table, oldKey, old)
			if retryable(err) {
				// Set at the old key meanwhile (by code still deployed):
				// this copy may be older than it, so copy again.
				continue
			}
			if err == nil {
				c.Deleted++
			}
		}
		// The copy stands (counted once, whatever the attempts before it).
		if copied {
			c.Copied++
		} else {
			c.Kept++
		}
		return err
	}
}

// copyPlan writes old's attributes at newKey unless the new key holds a
// plan as recent or more. It reports whether it wrote.
func copyPlan(ctx context.Context, db DB, table string, old, newKey map[string]types.AttributeValue) (bool, error) {
	out, err := db.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(table), Key: newKey, ConsistentRead: aws.Bool(true)})
	if err != nil {
		return false, fmt.Errorf("read new plan: %w", err)
	}
	cur := out.Item
	put := &dynamodb.PutItemInput{TableName: aws.String(table), Item: withKey(old, newKey)}
	if len(cur) == 0 {
		put.ConditionExpression = aws.String("attribute_not_exists(#pk)")
		put.ExpressionAttributeNames = map[string]string{"#pk": tablekeys.PK}
	} else {
		if !updatedAt(old).After(updatedAt(cur)) {
			return false, nil
		}
		cond, names, values := unchanged(cur)
		put.ConditionExpression, put.ExpressionAttributeNames, put.ExpressionAttributeValues = aws.String(cond), names, values
	}
	if _, err := db.PutItem(ctx, put); err != nil {
		return false, writeErr("write new plan", err)
	}
	return true, nil
}

// deleteIfUnchanged deletes the old item if it is still as read.
func deleteIfUnchanged(ctx context.Context, db DB, table string, oldKey, old map[string]types.AttributeValue) error {
	cond, names, values := unchanged(old)
	_, err := db.DeleteItem(ctx, &dynamodb.DeleteItemInput{
		TableName: aws.String(table), Key: oldKey,
		ConditionExpression: aws.String(cond), ExpressionAttributeNames: names, ExpressionAttributeValues: values,
	})
	return writeErr("delete old plan", err)
}

// unchanged is a condition that holds while an item is exactly item: it
// exists and each of its attributes has the value read (a plan's
// attributes are scalars, which DynamoDB compares with =).
func unchanged(item map[string]types.AttributeValue) (string, map[string]string, map[string]types.AttributeValue) {
	names := make([]string, 0, len(item))
	for n := range item {
		names = append(names, n)
	}
	sort.Strings(names)
	cond := "attribute_exists(#pk)"
	an := map[string]string{"#pk": tablekeys.PK}
	av := map[string]types.AttributeValue{}
	for i, n := range names {
		if n == tablekeys.PK || n == tablekeys.SK {
			continue
		}
		a, v := fmt.Sprintf("#a%d", i), fmt.Sprintf(":v%d", i)
		cond += fmt.Sprintf(" AND %s = %s", a, v)
		an[a], av[v] = n, item[n]
	}
	if len(av) == 0 {
		av = nil
	}
	return cond, an, av
}

// writeErr says whether a write found the item changed (errChanged) or
// met a transaction on it, both retried; anything else is returned.
func writeErr(what string, err error) error {
	var ccf *types.ConditionalCheckFailedException
	var busy *types.TransactionConflictException
	switch {
	case err == nil:
		return nil
	case errors.As(err, &ccf), errors.As(err, &busy):
		return fmt.Errorf("%s: %w (%w)", what, errChanged, err)
	}
	return fmt.Errorf("%s: %w", what, err)
}

func retryable(err error) bool { return errors.Is(err, errChanged) }

// updatedAt is an item's updatedAt, zero if it has none.
func updatedAt(item map[string]types.AttributeValue) time.Time {
	t, err := time.Parse(time.RFC3339Nano, strOf(item, attrUpdatedAt))
	if err != nil {
		return time.Time{}
	}
	return t
}

func withKey(item, k map[string]types.AttributeValue) map[string]types.AttributeValue {
	out := make(map[string]types.AttributeValue, len(item))
	for n, v := range item {
		out[n] = v
	}
	for n, v := range k {
		out[n] = v
	}
	return out
}

func key(k tablekeys.Key) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{tablekeys.PK: str(k.PK), tablekeys.SK: str(k.SK)}
}

func str(s string) types.AttributeValue { return &types.AttributeValueMemberS{Value: s} }

func strOf(item map[string]types.AttributeValue, name string) string {
	if s, ok := item[name].(*types.AttributeValueMemberS); ok {
		return s.Value
	}
	return ""
}
