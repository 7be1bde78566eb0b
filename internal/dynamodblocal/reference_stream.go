package dynamodblocal

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/types"
)

// The poller's pace, after Lambda's event source mapping for DynamoDB
// streams: GetRecords takes up to 1,000 records a call; an idle shard is
// polled again shortly (Lambda polls each shard four times a second; here
// faster, so that tests wait less); a failed call is retried with a
// backoff; and no more is read while the mapping has many records in hand.
const (
	getRecordsLimit = 1000
	pollIdle        = 20 * time.Millisecond
	pollRetryMin    = 50 * time.Millisecond
	pollRetryMax    = 5 * time.Second
	pollMaxInHand   = 10_000
)

// poller is the reading half of an event source mapping on DynamoDB
// Local's stream: it walks the shards through the Streams API (a parent
// shard to its end before its children, each shard in its order, fresh
// iterators when one expires) and hands the records, as Lambda passes
// them to a function, to the mapping's buffer, which batches, invokes and
// retries them as on the embedded server.
type poller struct {
	ref        *reference
	client     *dynamodbstreams.Client
	arn, table string
	out        *stream
	clock      Clock // of the records' arrival
	log        *slog.Logger
	done       chan struct{}

	cursors []*cursor
	begun   map[string]bool // shards read or being read
}

// cursor is where the poller is in one shard.
type cursor struct {
	shard string
	iter  *string
	last  string // the last sequence number read, "" before the first
}

// startPoller begins a poller of the stream arn at position (TRIM_HORIZON:
// every shard from its oldest record, parents first; LATEST: the open
// shards' ends, fixed before it returns, so a write after Subscribe
// returns is delivered and one before it is not).
func (r *reference) startPoller(ctx context.Context, arn, table string, out *stream, position events.DynamoDBSharedIteratorType, clock Clock, log *slog.Logger) (*poller, error) {
	p := &poller{ref: r, client: r.streams, arn: arn, table: table, out: out, clock: clock, log: log, done: make(chan struct{}), begun: map[string]bool{}}
	shards, err := p.shards(ctx)
	if err != nil {
		return nil, err
	}
	ids := map[string]bool{}
	for _, sh := range shards {
		ids[aws.ToString(sh.ShardId)] = true
	}
	for _, sh := range shards {
		id := aws.ToString(sh.ShardId)
		var err error
		switch {
		case position == events.DynamoDBShardIteratorTypeLatest && sh.SequenceNumberRange.EndingSequenceNumber == nil:
			err = p.begin(ctx, id, types.ShardIteratorTypeLatest)
		case position == events.DynamoDBShardIteratorTypeTrimHorizon && !ids[aws.ToString(sh.ParentShardId)]:
			err = p.begin(ctx, id, types.ShardIteratorTypeTrimHorizon)
		}
		if err != nil {
			return nil, err
		}
	}
	return p, nil
}

// shards lists every shard of the stream.
func (p *poller) shards(ctx context.Context) ([]types.Shard, error) {
	var all []types.Shard
	in := &dynamodbstreams.DescribeStreamInput{StreamArn: aws.String(p.arn)}
	for {
		out, err := p.client.DescribeStream(ctx, in)
		if err != nil {
			return nil, fmt.Errorf("reference dynamodb: describe stream %s: %w", p.arn, err)
		}
		all = append(all, out.StreamDescription.Shards...)
		if out.StreamDescription.LastEvaluatedShardId == nil {
			return all, nil
		}
		in.ExclusiveStartShardId = out.StreamDescription.LastEvaluatedShardId
	}
}

// begin adds a cursor on shard at an iterator of kind.
func (p *poller) begin(ctx context.Context, shard string, kind types.ShardIteratorType) error {
	out, err := p.client.GetShardIterator(ctx, &dynamodbstreams.GetShardIteratorInput{
		StreamArn: aws.String(p.arn), ShardId: aws.String(shard), ShardIteratorType: kind,
	})
	if err != nil {
		return fmt.Errorf("reference dynamodb: shard iterator of %s: %w", shard, err)
	}
	p.begun[shard] = true
	p.cursors = append(p.cursors, &cursor{shard: shard, iter: out.ShardIterator})
	return nil
}

// run polls until ctx is done.
func (p *poller) run(ctx context.Context) {
	defer close(p.done)
	backoff := pollRetryMin
	for {
		wait := pollIdle
		if p.out.size() < pollMaxInHand {
			read, err := p.pollOnce(ctx)
			if ctx.Err() != nil {
				return
			}
			switch {
			case err != nil:
				p.log.Warn("reference dynamodb: stream poll failed, retrying", "error", err, "retryIn", backoff)
				wait, backoff = backoff, min(2*backoff, pollRetryMax)
			case read > 0:
				backoff = pollRetryMin
				continue
			default:
				backoff = pollRetryMin
			}
		}
		t := time.NewTimer(wait) // the poll loop's own pace, not the server's clock
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
	}
}

// pollOnce reads each shard once and says how many records it handed on.
func (p *poller) pollOnce(ctx context.Context) (int, error) {
	read := 0
	for i := 0; i < len(p.cursors); {
		c := p.cursors[i]
		out, err := p.client.GetRecords(ctx, &dynamodbstreams.GetRecordsInput{ShardIterator: c.iter, Limit: aws.Int32(getRecordsLimit)})
		if err != nil {
			return read, p.recover(ctx, c, err)
		}
		p.hand(c, out.Records)
		read += len(out.Records)
		if out.NextShardIterator != nil {
			c.iter = out.NextShardIterator
			i++
			continue
		}
		// The shard is closed and read to its end: its children follow.
		p.cursors = append(p.cursors[:i], p.cursors[i+1:]...)
		if err := p.beginChildren(ctx, c.shard); err != nil {
			return read, err
		}
	}
	return read, nil
}

// recover gets a fresh iterator for a cursor whose iterator expired (after
// its last record, or where it began if it read none), or from the oldest
// record kept if its records were trimmed; other errors are the caller's.
func (p *poller) recover(ctx context.Context, c *cursor, err error) error {
	var expired *types.ExpiredIteratorException
	var trimmed *types.TrimmedDataAccessException
	in := &dynamodbstreams.GetShardIteratorInput{StreamArn: aws.String(p.arn), ShardId: aws.String(c.shard)}
	switch {
	case errors.As(err, &expired) && c.last != "":
		in.ShardIteratorType, in.SequenceNumber = types.ShardIteratorTypeAfterSequenceNumber, aws.String(c.last)
	case errors.As(err, &expired):
		in.ShardIteratorType = types.ShardIteratorTypeTrimHorizon
	case errors.As(err, &trimmed):
		// Before any record is read this is DynamoDB Local's answer to a
		// TRIM_HORIZON iterator of a table made again under its old name
		// (its first sequence numbers were the old stream's): nothing is lost.
		if c.last != "" {
			p.log.Warn("reference dynamodb: records expired from the stream before delivery", "shardId", c.shard, "after", c.last)
		}
		in.ShardIteratorType = types.ShardIteratorTypeTrimHorizon
	default:
		return fmt.Errorf("get records of %s: %w", c.shard, err)
	}
	out, gerr := p.client.GetShardIterator(ctx, in)
	if gerr != nil {
		return fmt.Errorf("fresh iterator of %s: %w", c.shard, gerr)
	}
	c.iter = out.ShardIterator
	return nil
}

// beginChildren starts reading the shards whose parent is shard.
func (p *poller) beginChildren(ctx context.Context, shard string) error {
	shards, err := p.shards(ctx)
	if err != nil {
		return err
	}
	for _, sh := range shards {
		id := aws.ToString(sh.ShardId)
		if aws.ToString(sh.ParentShardId) == shard && !p.begun[id] {
			if err := p.begin(ctx, id, types.ShardIteratorTypeTrimHorizon); err != nil {
				return err
			}
		}
	}
	return nil
}

// hand passes a shard's records to the mapping, as Lambda's event has
// them: DynamoDB Local's fields, the stream's ARN, and the TTL service's
// identity on the removals the sweep made.
func (p *poller) hand(c *cursor, recs []types.Record) {
	if len(recs) == 0 {
		return
	}
	out := make([]record, 0, len(recs))
	for _, r := range recs {
		d := r.Dynamodb
		f := recordFields{
			region: aws.ToString(r.AwsRegion), arn: p.arn, eventID: aws.ToString(r.EventID),
			name: string(r.EventName), view: string(d.StreamViewType), sn: aws.ToString(d.SequenceNumber),
			keys: itemOf(d.Keys), newImage: itemOf(d.NewImage), oldImage: itemOf(d.OldImage),
			size: aws.ToInt64(d.SizeBytes),
		}
		if d.ApproximateCreationDateTime != nil {
			f.created = d.ApproximateCreationDateTime.Unix()
		}
		if id := r.UserIdentity; id != nil {
			f.identity = &events.DynamoDBUserIdentity{Type: aws.ToString(id.Type), PrincipalID: aws.ToString(id.PrincipalId)}
		} else if r.EventName == types.OperationTypeRemove && p.ref.expiredBySweep(p.table, f.keys, f.oldImage) {
			f.identity = &TTLIdentity
		}
		out = append(out, record{sn: f.sn, shard: c.shard, data: f.json()})
		c.last = f.sn
	}
	p.out.appendRecords(out, p.clock.Now())
}

// itemOf is a stream image as the DynamoDB API's attribute values (nil
// stays nil: the view has no such image).
func itemOf(item map[string]types.AttributeValue) map[string]ddbtypes.AttributeValue {
	if item == nil {
		return nil
	}
	out := make(map[string]ddbtypes.AttributeValue, len(item))
	for k, v := range item {
		out[k] = valueOf(v)
	}
	return out
}

func valueOf(v types.AttributeValue) ddbtypes.AttributeValue {
	switch v := v.(type) {
	case *types.AttributeValueMemberS:
		return &ddbtypes.AttributeValueMemberS{Value: v.Value}
	case *types.AttributeValueMemberN:
		return &ddbtypes.AttributeValueMemberN{Value: v.Value}
	case *types.AttributeValueMemberB:
		return &ddbtypes.AttributeValueMemberB{Value: v.Value}
	case *types.AttributeValueMemberBOOL:
		return &ddbtypes.AttributeValueMemberBOOL{Value: v.Value}
	case *types.AttributeValueMemberSS:
		return &ddbtypes.AttributeValueMemberSS{Value: v.Value}
	case *types.AttributeValueMemberNS:
		return &ddbtypes.AttributeValueMemberNS{Value: v.Value}
	case *types.AttributeValueMemberBS:
		return &ddbtypes.AttributeValueMemberBS{Value: v.Value}
	case *types.AttributeValueMemberL:
		l := make([]ddbtypes.AttributeValue, len(v.Value))
		for i, e := range v.Value {
			l[i] = valueOf(e)
		}
		return &ddbtypes.AttributeValueMemberL{Value: l}
	case *types.AttributeValueMemberM:
		return &ddbtypes.AttributeValueMemberM{Value: itemOf(v.Value)}
	default:
		return &ddbtypes.AttributeValueMemberNULL{Value: true}
	}
}
