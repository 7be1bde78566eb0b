// Package store keeps installs, plans, daily usage, idempotency keys,
// sandbox records and AgentRuns in DynamoDB, through the AWS SDK.
package store

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/commonly/runtime/shared/retry"
	"github.com/commonly/runtime/shared/runs"
	"github.com/commonly/runtime/shared/tablekeys"
)

// DynamoAPI is the part of the DynamoDB client the store uses.
type DynamoAPI interface {
	GetItem(ctx context.Context, in *dynamodb.GetItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error)
	PutItem(ctx context.Context, in *dynamodb.PutItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error)
	UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error)
	DeleteItem(ctx context.Context, in *dynamodb.DeleteItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error)
	BatchGetItem(ctx context.Context, in *dynamodb.BatchGetItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.BatchGetItemOutput, error)
	TransactWriteItems(ctx context.Context, in *dynamodb.TransactWriteItemsInput, opts ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error)
	Query(ctx context.Context, in *dynamodb.QueryInput, opts ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error)
}

var _ DynamoAPI = (*dynamodb.Client)(nil)

// Tables names the two tables.
type Tables struct {
	// State holds installs, plans, usage counters, idempotency keys and
	// sandbox records (pk/sk).
	State string
	// Runs holds AgentRuns (runId); its stream feeds the cost alarm.
	Runs string
}

// Config configures the store. Zero values are the documented defaults;
// New refuses what the store cannot run with.
type Config struct {
	// DB is the DynamoDB client (*dynamodb.Client); required.
	DB DynamoAPI
	// Tables names the tables. State is required; Runs may be empty only
	// for a function that never reads or writes runs (the alarm, fed by
	// their stream).
	Tables Tables
	// IdempotencyTTL is how long an Idempotency-Key is remembered; zero
	// means DefaultIdempotencyTTL.
	IdempotencyTTL time.Duration
	// IndexShards is how many partition key values the open-runs and
	// live-sandbox indexes are spread over; zero means
	// tablekeys.DefaultIndexShards, which every function uses (the one
	// place the count is kept). Writers and the reaper must agree, and it
	// may grow but never shrink (tablekeys/shards.go).
	IndexShards int
}

// DefaultIdempotencyTTL is Config.IdempotencyTTL's default.
const DefaultIdempotencyTTL = 24 * time.Hour

// Dynamo is the DynamoDB-backed store.
type Dynamo struct {
	db             DynamoAPI
	tables         Tables
	idempotencyTTL time.Duration
	// conflicts spaces out retries of writes that met a transaction in
	// flight, unprocessed the retries of a batch get's left-over keys;
	// tests replace their sleep.
	conflicts, unprocessed retry.Backoff
	// openPage is the most open-index entries asked for in one Query
	// (maxOpenPage); tests make pages small.
	openPage int
	// shards is Config.IndexShards.
	shards int
}

// IndexShards is how many shards the open-runs and live-sandbox indexes
// are spread over: the reaper reads shards 0 to IndexShards-1.
func (d *Dynamo) IndexShards() int { return d.shards }

// New checks cfg and fills its defaults.
func New(cfg Config) (*Dynamo, error) {
	var errs []error
	if cfg.DB == nil {
		errs = append(errs, errors.New("store: a DynamoDB client is required"))
	}
	if cfg.Tables.State == "" {
		errs = append(errs, errors.New("store: the state table's name is required"))
	}
	if cfg.IdempotencyTTL < 0 {
		errs = append(errs, fmt.Errorf("store: idempotency TTL %v is negative", cfg.IdempotencyTTL))
	}
	if cfg.IndexShards < 0 || cfg.IndexShards > tablekeys.MaxIndexShards {
		errs = append(errs, fmt.Errorf("store: index shards %d is not between 1 and %d", cfg.IndexShards, tablekeys.MaxIndexShards))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	if cfg.IdempotencyTTL == 0 {
		cfg.IdempotencyTTL = DefaultIdempotencyTTL
	}
	if cfg.IndexShards == 0 {
		cfg.IndexShards = tablekeys.DefaultIndexShards
	}
	return &Dynamo{
		db: cfg.DB, tables: cfg.Tables, idempotencyTTL: cfg.IdempotencyTTL,
		conflicts:   retry.Backoff{Base: 5 * time.Millisecond, Max: 320 * time.Millisecond},
		unprocessed: retry.Backoff{Base: 20 * time.Millisecond, Max: 320 * time.Millisecond},
		openPage:    maxOpenPage,
		shards:      cfg.IndexShards,
	}, nil
}

// getItem reads one item with a strongly consistent read: admission,
// claims and replays decide on what they read. A missing item is empty.
func (d *Dynamo) getItem(ctx context.Context, table string, key map[string]types.AttributeValue) (map[string]types.AttributeValue, error) {
	out, err := d.db.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(table), Key: key, ConsistentRead: aws.Bool(true)})
	if err != nil {
		return nil, err
	}
	return out.Item, nil
}

func stateKey(k tablekeys.Key) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{tablekeys.PK: str(k.PK), tablekeys.SK: str(k.SK)}
}

func runKey(runID string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{tablekeys.RunID: str(runID)}
}

func str(s string) types.AttributeValue { return &types.AttributeValueMemberS{Value: s} }

func num(n int64) types.AttributeValue {
	return &types.AttributeValueMemberN{Value: strconv.FormatInt(n, 10)}
}

// numAttr reads an integer attribute; missing is 0.
func numAttr(item map[string]types.AttributeValue, name string) int64 {
	n, ok := item[name].(*types.AttributeValueMemberN)
	if !ok {
		return 0
	}
	v, _ := strconv.ParseInt(n.Value, 10, 64)
	return v
}

func strAttr(item map[string]types.AttributeValue, name string) string {
	s, ok := item[name].(*types.AttributeValueMemberS)
	if !ok {
		return ""
	}
	return s.Value
}

// withKey marshals v and adds a state-table key.
func withKey(v any, k tablekeys.Key) (map[string]types.AttributeValue, error) {
	item, err := attributevalue.MarshalMap(v)
	if err != nil {
		return nil, fmt.Errorf("marshal %T: %w", v, err)
	}
	item[tablekeys.PK], item[tablekeys.SK] = str(k.PK), str(k.SK)
	return item, nil
}

// isConditionFailed reports a failed condition of a single-item write:
// an outcome, not a failure of the store.
func isConditionFailed(err error) (*types.ConditionalCheckFailedException, bool) {
	var ccf *types.ConditionalCheckFailedException
	return ccf, errors.As(err, &ccf)
}

func encodeTime(t time.Time) types.AttributeValue { return str(t.UTC().Format(time.RFC3339Nano)) }

// marshalRun encodes a run, leaving out empty lists: a missing list reads
// back as empty, and not every DynamoDB-compatible server keeps `L: []`.
// Every write of a run carries its TTL, kept tablekeys.Retention after the day
// it was admitted on. Every write of an open run carries its key on the
// open-runs index and every final one leaves it out: runs are written
// whole (PutItem), so the final write takes the run off the index, and
// the index holds exactly the open runs.
func (d *Dynamo) marshalRun(r *runs.Run) (map[string]types.AttributeValue, error) {
	item, err := attributevalue.MarshalMap(r)
	if err != nil {
		return nil, fmt.Errorf("marshal run %s: %w", r.RunID, err)
	}
	dropEmptyLists(item)
	if len(r.Events) > 0 {
		item[attrEvents] = str(runs.EncodeEvents(r.Events))
	}
	item[tablekeys.TTL] = num(tablekeys.ExpiresAfterDay(r.CreatedAt))
	// On the user-runs index from its admission; its summary, the one
	// attribute the index projects, from its final write on.
	item[tablekeys.UserRunsSK] = str(tablekeys.UserRunsSort(r.CreatedAt))
	if r.Status.Final() {
		sum, err := attributevalue.MarshalMap(r.Summary())
		if err != nil {
			return nil, fmt.Errorf("marshal the summary of run %s: %w", r.RunID, err)
		}
		item[tablekeys.UserRunsSummary] = &types.AttributeValueMemberM{Value: sum}
	}
	if !r.Status.Final() {
		// A final run is held by nobody: its lease goes with the index.
		leaseAttrs(r, item)
		shard := tablekeys.Shard(r.RunID, d.shards)
		item[tablekeys.OpenPK], item[tablekeys.OpenSK] = str(tablekeys.OpenPartition(shard)), str(tablekeys.OpenSort(r.CreatedAt))
	}
	return item, nil
}

func dropEmptyLists(m map[string]types.AttributeValue) {
	for k, v := range m {
		switch v := v.(type) {
		case *types.AttributeValueMemberL:
			if len(v.Value) == 0 {
				delete(m, k)
				continue
			}
			for _, e := range v.Value {
				if mm, ok := e.(*types.AttributeValueMemberM); ok {
					dropEmptyLists(mm.Value)
				}
			}
		case *types.AttributeValueMemberM:
			dropEmptyLists(v.Value)
		}
	}
}
