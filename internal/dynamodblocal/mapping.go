package dynamodblocal

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambdacontext"
)

// Handler is a stream function's handler, as Lambda invokes it.
type Handler func(context.Context, events.DynamoDBEvent) (events.DynamoDBEventResponse, error)

// MappingConfig is an event source mapping's configuration, after Lambda's
// (CreateEventSourceMapping). Zero values are the defaults given.
type MappingConfig struct {
	// BatchSize is the most records in one invocation; 0 means 100,
	// Lambda's default for DynamoDB streams.
	BatchSize int
	// MaximumBatchingWindow is how long records are gathered, from the
	// first one available, before a batch smaller than BatchSize is
	// delivered; 0 means at once (Lambda's default for streams).
	MaximumBatchingWindow time.Duration
	// StartingPosition is where a new mapping starts reading:
	// TRIM_HORIZON (the default here: every record the stream still
	// keeps) or LATEST (only records written after Subscribe).
	StartingPosition events.DynamoDBSharedIteratorType
	// ReportBatchItemFailures honours the handler's BatchItemFailures
	// (Lambda's FunctionResponseTypes ReportBatchItemFailures): the batch
	// is retried from the lowest failed SequenceNumber. Off, as in Lambda,
	// a response's failures are ignored.
	ReportBatchItemFailures bool
	// MaxAttempts is how many times a batch is invoked before it is given
	// up and its on-failure record logged (Lambda's MaximumRetryAttempts
	// plus one); 0 means 4. A partial failure that moved the checkpoint
	// forward starts the count again from the record that failed.
	MaxAttempts int
	// RetryDelay is the wait before the first retry, doubled for each next
	// one up to 30 s; 0 means 1 s.
	RetryDelay time.Duration
	// FunctionName names the handler in the on-failure record's
	// functionArn; "" means "local-handler".
	FunctionName string
	// OnFailure, if set, receives the on-failure record of each batch
	// given up, besides the log.
	OnFailure func(OnFailureRecord)
}

// Defaults of MappingConfig.
const (
	DefaultBatchSize    = 100
	DefaultMaxAttempts  = 4
	DefaultRetryDelay   = time.Second
	maxRetryDelay       = 30 * time.Second
	defaultFunctionName = "local-handler"
)

// OnFailureRecord is what Lambda sends an event source mapping's
// on-failure destination about a DynamoDB stream batch it gave up: where
// the records are, not the records.
type OnFailureRecord struct {
	RequestContext struct {
		RequestID              string `json:"requestId"`
		FunctionArn            string `json:"functionArn"`
		Condition              string `json:"condition"`
		ApproximateInvokeCount int    `json:"approximateInvokeCount"`
	} `json:"requestContext"`
	ResponseContext struct {
		StatusCode      int    `json:"statusCode"`
		ExecutedVersion string `json:"executedVersion"`
		FunctionError   string `json:"functionError,omitempty"`
	} `json:"responseContext"`
	Version            string             `json:"version"`
	Timestamp          string             `json:"timestamp"`
	DDBStreamBatchInfo DDBStreamBatchInfo `json:"DDBStreamBatchInfo"`
}

// DDBStreamBatchInfo locates a batch in its stream.
type DDBStreamBatchInfo struct {
	ShardID                         string `json:"shardId"`
	StartSequenceNumber             string `json:"startSequenceNumber"`
	EndSequenceNumber               string `json:"endSequenceNumber"`
	ApproximateArrivalOfFirstRecord string `json:"approximateArrivalOfFirstRecord"`
	ApproximateArrivalOfLastRecord  string `json:"approximateArrivalOfLastRecord"`
	BatchSize                       int    `json:"batchSize"`
	StreamArn                       string `json:"streamArn"`
}

// ErrNoStream is Subscribe's error for a table without an enabled stream.
var ErrNoStream = errors.New("embedded dynamodb: the table has no enabled stream")

// Subscribe maps the stream of table to h, as a Lambda event source
// mapping does: one batch at a time in the shard's order, retried as
// MappingConfig says, each batch given up written to the log as its
// on-failure record. The mapping runs until stop is called (which waits
// for an invocation in progress and cancels its context), ctx is done or
// the server closes.
func (s *Server) Subscribe(ctx context.Context, table string, h Handler, cfg MappingConfig) (stop func(), err error) {
	info, err := s.describe(ctx, table)
	if err != nil {
		return nil, err
	}
	if info.StreamViewType == "" {
		return nil, fmt.Errorf("subscribe to %s: %w", table, ErrNoStream)
	}
	cfg, err = cfg.withDefaults()
	if err != nil {
		return nil, fmt.Errorf("subscribe to %s: %w", table, err)
	}
	m := &mapping{
		handler: h, cfg: cfg, clock: s.cfg.Clock,
		functionArn: "arn:aws:lambda:" + Region + ":" + AccountID + ":function:" + cfg.FunctionName,
		done:        make(chan struct{}),
	}
	mctx, cancel := context.WithCancel(ctx)
	var p *poller
	if s.ref != nil {
		// A buffer of the mapping's own, filled by its poller of DynamoDB
		// Local's stream and emptied as batches are delivered.
		m.stream = newStream(table, info.StreamARN, info.StreamViewType, s.cfg)
		m.stream.retention, m.stream.limit, m.own = 1<<62, 1<<62, true
		m.log = s.cfg.Log.With("table", table)
		if p, err = s.ref.startPoller(mctx, info.StreamARN, table, m.stream, cfg.StartingPosition, s.cfg.Clock, m.log); err != nil {
			cancel()
			return nil, fmt.Errorf("subscribe to %s: %w", table, err)
		}
	} else {
		m.stream = s.stream(info.StreamARN, table, info.StreamViewType)
		m.log = s.cfg.Log.With("table", table, "shardId", m.stream.shardID)
	}
	pos := m.stream.oldest()
	if cfg.StartingPosition == events.DynamoDBShardIteratorTypeLatest {
		pos = m.stream.latest()
	}
	done := make(chan struct{}) // when the mapping and its poller have returned
	if !s.track(cancel, done) {
		cancel()
		return nil, fmt.Errorf("subscribe to %s: the server is closed", table)
	}
	go m.run(mctx, pos)
	if p != nil {
		go p.run(mctx)
	}
	go func() {
		<-m.done
		if p != nil {
			<-p.done
		}
		close(done)
	}()
	var once sync.Once
	return func() {
		once.Do(func() {
			cancel()
			<-done
		})
	}, nil
}

func (c MappingConfig) withDefaults() (MappingConfig, error) {
	if c.BatchSize == 0 {
		c.BatchSize = DefaultBatchSize
	}
	if c.MaxAttempts == 0 {
		c.MaxAttempts = DefaultMaxAttempts
	}
	if c.RetryDelay == 0 {
		c.RetryDelay = DefaultRetryDelay
	}
	if c.FunctionName == "" {
		c.FunctionName = defaultFunctionName
	}
	if c.StartingPosition == "" {
		c.StartingPosition = events.DynamoDBShardIteratorTypeTrimHorizon
	}
	var errs []error
	if c.BatchSize < 1 || c.BatchSize > 10_000 {
		errs = append(errs, fmt.Errorf("BatchSize %d: must be 1 to 10,000", c.BatchSize))
	}
	if c.MaxAttempts < 1 {
		errs = append(errs, fmt.Errorf("MaxAttempts %d: must be at least 1", c.MaxAttempts))
	}
	if c.MaximumBatchingWindow < 0 || c.RetryDelay < 0 {
		errs = append(errs, errors.New("MaximumBatchingWindow and RetryDelay cannot be negative"))
	}
	if p := c.StartingPosition; p != events.DynamoDBShardIteratorTypeTrimHorizon && p != events.DynamoDBShardIteratorTypeLatest {
		errs = append(errs, fmt.Errorf("StartingPosition %q: must be TRIM_HORIZON or LATEST", p))
	}
	return c, errors.Join(errs...)
}

type mapping struct {
	stream      *stream
	own         bool // the stream is the mapping's own buffer: delivered records go
	handler     Handler
	cfg         MappingConfig
	clock       Clock
	log         *slog.Logger
	functionArn string
	done        chan struct{}
}

func (m *mapping) run(ctx context.Context, pos uint64) {
	defer close(m.done)
	for {
		batch, ok := m.gather(ctx, pos)
		if !ok {
			return
		}
		if !m.deliver(ctx, batch) {
			return
		}
		pos = batch[len(batch)-1].seq + 1
		if m.own {
			m.stream.release(pos)
		}
	}
}

// gather waits for the next batch from pos: BatchSize records, or fewer
// once the batching window has passed since records were first there.
func (m *mapping) gather(ctx context.Context, pos uint64) ([]record, bool) {
	var window Timer
	windowOver := m.cfg.MaximumBatchingWindow == 0
	defer func() {
		if window != nil {
			window.Stop()
		}
	}()
	for {
		recs, from, grew := m.stream.read(pos, m.cfg.BatchSize)
		if from > pos {
			m.log.Warn("event source mapping: records expired from the stream before delivery",
				"lost", from-pos, "firstPosition", pos)
			pos = from
		}
		if len(recs) == m.cfg.BatchSize || (len(recs) > 0 && windowOver) {
			return recs, true
		}
		var fire <-chan time.Time
		if len(recs) > 0 {
			if window == nil {
				window = m.clock.NewTimer(m.cfg.MaximumBatchingWindow)
			}
			fire = window.C()
		}
		select {
		case <-ctx.Done():
			return nil, false
		case <-grew:
		case <-fire:
			windowOver = true // read again: records may have come with the window's end
		}
	}
}

// deliver invokes the handler with batch until it succeeds or the batch is
// given up, and says whether the mapping is still running.
func (m *mapping) deliver(ctx context.Context, batch []record) bool {
	attempts := 0
	delay := m.cfg.RetryDelay
	for {
		attempts++
		resp, err := m.invoke(ctx, batch)
		if ctx.Err() != nil {
			return false
		}
		functionError := ""
		if err != nil {
			functionError = "Unhandled"
		} else if m.cfg.ReportBatchItemFailures && len(resp.BatchItemFailures) > 0 {
			first, ferr := firstFailure(batch, resp.BatchItemFailures)
			err = ferr
			if ferr == nil {
				err = fmt.Errorf("the handler reported %d failed records", len(resp.BatchItemFailures))
				if first > 0 { // the records before the first failure are done
					batch, attempts = batch[first:], 0
				}
			}
		}
		if err == nil {
			return true
		}
		if attempts >= m.cfg.MaxAttempts {
			m.giveUp(batch, attempts, functionError)
			return true
		}
		m.log.Warn("event source mapping: batch failed, retrying",
			"error", err, "attempt", attempts, "startSequenceNumber", batch[0].sequenceNumber(),
			"endSequenceNumber", batch[len(batch)-1].sequenceNumber(), "retryIn", delay)
		t := m.clock.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return false
		case <-t.C():
		}
		delay = min(2*delay, maxRetryDelay)
	}
}

// firstFailure returns the index of the lowest failed SequenceNumber, which
// Lambda takes for the checkpoint. An identifier that is empty or not a
// SequenceNumber of the batch fails the whole batch, as in Lambda.
func firstFailure(batch []record, failures []events.DynamoDBBatchItemFailure) (int, error) {
	first := len(batch)
	for _, f := range failures {
		i := slices.IndexFunc(batch, func(r record) bool { return r.sequenceNumber() == f.ItemIdentifier })
		if i < 0 {
			return 0, fmt.Errorf("batchItemFailures: itemIdentifier %q is not a SequenceNumber of the batch", f.ItemIdentifier)
		}
		first = min(first, i)
	}
	return first, nil
}

// invoke calls the handler as Lambda would: the batch as the JSON event,
// a Lambda context, and a panic turned into a function error.
func (m *mapping) invoke(ctx context.Context, batch []record) (resp events.DynamoDBEventResponse, err error) {
	var buf bytes.Buffer
	buf.WriteString(`{"Records":[`)
	for i, r := range batch {
		if i > 0 {
			buf.WriteByte(',')
		}
		buf.Write(r.data)
	}
	buf.WriteString(`]}`)
	var ev events.DynamoDBEvent
	if err := json.Unmarshal(buf.Bytes(), &ev); err != nil {
		return resp, fmt.Errorf("event: %w", err)
	}
	ctx = lambdacontext.NewContext(ctx, &lambdacontext.LambdaContext{AwsRequestID: requestID(), InvokedFunctionArn: m.functionArn})
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("handler panicked: %v", p)
		}
	}()
	return m.handler(ctx, ev)
}

// giveUp writes the on-failure record of a batch, as Lambda sends it to
// the mapping's on-failure destination, and moves past the batch.
func (m *mapping) giveUp(batch []record, attempts int, functionError string) {
	var rec OnFailureRecord
	rec.RequestContext.RequestID = requestID()
	rec.RequestContext.FunctionArn = m.functionArn
	rec.RequestContext.Condition = "RetryAttemptsExhausted"
	rec.RequestContext.ApproximateInvokeCount = attempts
	rec.ResponseContext.StatusCode = 200
	rec.ResponseContext.ExecutedVersion = "$LATEST"
	rec.ResponseContext.FunctionError = functionError
	rec.Version = "1.0"
	rec.Timestamp = m.clock.Now().UTC().Format("2006-01-02T15:04:05.000Z")
	first, last := batch[0], batch[len(batch)-1]
	shard := first.shard
	if shard == "" {
		shard = m.stream.shardID
	}
	rec.DDBStreamBatchInfo = DDBStreamBatchInfo{
		ShardID:                         shard,
		StartSequenceNumber:             first.sequenceNumber(),
		EndSequenceNumber:               last.sequenceNumber(),
		ApproximateArrivalOfFirstRecord: first.arrival.UTC().Format(time.RFC3339),
		ApproximateArrivalOfLastRecord:  last.arrival.UTC().Format(time.RFC3339),
		BatchSize:                       len(batch),
		StreamArn:                       m.stream.arn,
	}
	m.log.Error("event source mapping: batch given up, on-failure record", "onFailure", rec)
	if m.cfg.OnFailure != nil {
		m.cfg.OnFailure(rec)
	}
}

// requestID is a random UUID (version 4), as Lambda's request ids are.
func requestID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read does not fail
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:])
}
