// Package dynamodblocal serves an in-process DynamoDB-compatible API (minidyn,
// patched in third_party/minidyn) on loopback, so the real AWS SDK client
// talks to a real DynamoDB JSON endpoint on a machine without a cloud
// account, with what DynamoDB adds around its tables: streams, a Lambda
// event source mapping to deliver them in process (Subscribe), and Time
// to Live. For the local stack and tests only.
package dynamodblocal

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/truora/minidyn/server"

	"github.com/commonly/runtime/internal/awscalls"
	"github.com/commonly/runtime/internal/loopback"
	"github.com/commonly/runtime/shared/store"
)

// The region and the static dummy credentials of the server's clients
// (it checks no signature), and the account in its ARNs.
const (
	Region          = "us-east-1"
	AccessKeyID     = "local"
	SecretAccessKey = "local"
	AccountID       = "000000000000"
)

// EndpointVar is the SDK's standard variable for DynamoDB's endpoint.
const EndpointVar = "AWS_ENDPOINT_URL_DYNAMODB"

// AWSEnv is the environment with which the AWS SDK's default
// configuration chain reaches the DynamoDB at endpoint: the endpoint
// variable, the region and the dummy credentials.
func AWSEnv(endpoint string) map[string]string {
	return map[string]string{
		EndpointVar: endpoint, "AWS_REGION": Region,
		"AWS_ACCESS_KEY_ID": AccessKeyID, "AWS_SECRET_ACCESS_KEY": SecretAccessKey,
	}
}

// Config is the server's configuration. Zero values are the defaults given.
type Config struct {
	// Addr is where to listen; "" means "127.0.0.1:0", any free port.
	Addr string
	// Clock drives the TTL sweep, the time of stream records, the event
	// source mappings and the 10 minutes a TransactWriteItems
	// ClientRequestToken is remembered; nil means the system clock.
	Clock Clock
	// TTLSweepInterval is how often items past their TTL are deleted; 0
	// means 30 s, a negative value no sweep (ExpireNow only).
	TTLSweepInterval time.Duration
	// StreamRetention is how long stream records are kept; 0 means 24 h,
	// as in DynamoDB.
	StreamRetention time.Duration
	// StreamRecordLimit is the most records a stream keeps in memory, the
	// oldest dropped first; 0 means 10,000.
	StreamRecordLimit int
	// Log receives the event source mappings' retries and on-failure
	// records; nil means slog.Default().
	Log *slog.Logger
	// Calls, when set, records every request served (awscalls.Handler):
	// how the RIE tests see the calls of a bootstrap in its own process.
	Calls *awscalls.Recorder
}

// Server is a running embedded DynamoDB, or a front of the reference
// DynamoDB Local (NewReference) with the same API.
type Server struct {
	URL         string
	cfg         Config
	accessKeyID string         // of its clients (the reference keeps a database per key)
	ddb         *server.Server // the embedded engine; nil in front of the reference
	ref         *reference     // the reference's front; nil when embedded
	srv         *loopback.Server

	mu       sync.Mutex
	streams  map[string]*stream // by stream ARN (embedded)
	closed   bool
	stops    []context.CancelFunc // of the TTL sweep and the mappings
	finished []chan struct{}      // closed when each of those has returned

	closeOnce sync.Once
	closeErr  error
}

// New starts a server as cfg says: it listens and serves until Close. It
// is the embedded engine, unless ReferenceVar names a DynamoDB Local: then
// it is NewReference's front of it (make test runs the DynamoDB-facing
// packages both ways).
func New(cfg Config) (*Server, error) {
	if url := referenceURL(); url != "" {
		return NewReference(cfg, url)
	}
	return NewEmbedded(cfg)
}

// NewEmbedded starts the embedded engine as cfg says, whatever the
// environment.
func NewEmbedded(cfg Config) (*Server, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	ddb := server.NewServer(server.WithRegion(Region), server.WithAccountID(AccountID), server.WithClock(cfg.Clock.Now))
	s := &Server{cfg: cfg, accessKeyID: AccessKeyID, ddb: ddb, streams: map[string]*stream{}}
	ddb.OnItemChanges(s.record)
	if err := s.serve(refuseUnsigned(ddb)); err != nil {
		return nil, err
	}
	return s, nil
}

func (cfg Config) withDefaults() (Config, error) {
	if cfg.Addr == "" {
		cfg.Addr = "127.0.0.1:0"
	}
	if cfg.Clock == nil {
		cfg.Clock = SystemClock{}
	}
	if cfg.TTLSweepInterval == 0 {
		cfg.TTLSweepInterval = 30 * time.Second
	}
	if cfg.StreamRetention == 0 {
		cfg.StreamRetention = 24 * time.Hour
	}
	if cfg.StreamRecordLimit == 0 {
		cfg.StreamRecordLimit = 10_000
	}
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	if cfg.StreamRetention < 0 || cfg.StreamRecordLimit < 0 {
		return cfg, errors.New("embedded dynamodb: StreamRetention and StreamRecordLimit cannot be negative")
	}
	return cfg, nil
}

// serve listens on cfg.Addr and serves h (its requests recorded in
// cfg.Calls), and starts the TTL sweep.
func (s *Server) serve(h http.Handler) error {
	srv, err := loopback.Serve(s.cfg.Addr, awscalls.Handler("dynamodb", s.cfg.Calls, h))
	if err != nil {
		return fmt.Errorf("embedded dynamodb: %w", err)
	}
	s.srv, s.URL = srv, srv.URL
	if s.cfg.TTLSweepInterval > 0 {
		ctx, cancel := context.WithCancel(context.Background())
		finished := make(chan struct{})
		s.track(cancel, finished)
		go s.sweep(ctx, finished)
	}
	return nil
}

// Start starts a server on addr with the default configuration.
func Start(addr string) (*Server, error) { return New(Config{Addr: addr}) }

// StartWithTables starts a server on addr and creates the runtime's tables.
func StartWithTables(ctx context.Context, addr string, t store.Tables) (*Server, error) {
	return NewWithTables(ctx, Config{Addr: addr}, t)
}

// NewWithTables starts a server as cfg says and creates the runtime's
// tables (store.CreateTables: their streams and TTL included).
func NewWithTables(ctx context.Context, cfg Config, t store.Tables) (*Server, error) {
	s, err := New(cfg)
	if err != nil {
		return nil, err
	}
	if err := store.CreateTables(ctx, s.Client(), t); err != nil {
		_ = s.Close()
		return nil, err
	}
	return s, nil
}

// Close stops the event source mappings, the TTL sweep and the server.
// It may be called more than once (a test's cleanup after the code under
// test closed it): later calls return the first one's error.
func (s *Server) Close() error {
	s.closeOnce.Do(func() { s.closeErr = s.close() })
	return s.closeErr
}

func (s *Server) close() error {
	s.mu.Lock()
	s.closed = true
	stops, finished := s.stops, s.finished
	s.stops, s.finished = nil, nil
	s.mu.Unlock()
	for _, stop := range stops {
		stop()
	}
	for _, f := range finished {
		<-f
	}
	err := s.srv.Close()
	if s.ref != nil {
		err = errors.Join(err, s.ref.dropTables())
	}
	return err
}

// track registers a goroutine Close stops (cancel) and waits for
// (finished); false if the server is already closed.
func (s *Server) track(cancel context.CancelFunc, finished chan struct{}) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return false
	}
	s.stops = append(s.stops, cancel)
	s.finished = append(s.finished, finished)
	return true
}

// AWSEnv is the environment with which the AWS SDK's default
// configuration chain reaches the server (AWSEnv of its URL).
func (s *Server) AWSEnv() map[string]string {
	env := AWSEnv(s.URL)
	env["AWS_ACCESS_KEY_ID"] = s.accessKeyID
	return env
}

// Client returns a real SDK client for the server, with static dummy
// credentials (the server requires a signature but does not check it).
func (s *Server) Client(opts ...func(*dynamodb.Options)) *dynamodb.Client {
	cfg := aws.Config{
		Region:      Region,
		Credentials: credentials.NewStaticCredentialsProvider(s.accessKeyID, SecretAccessKey, ""),
	}
	return dynamodb.NewFromConfig(cfg, append([]func(*dynamodb.Options){func(o *dynamodb.Options) {
		o.BaseEndpoint = aws.String(s.URL)
	}}, opts...)...)
}

// record appends committed changes to their streams. minidyn calls it in
// commit order while the write holds its lock.
func (s *Server) record(changes []server.ItemChange) {
	now := s.cfg.Clock.Now()
	for len(changes) > 0 { // a transaction's changes, grouped by stream in their order
		arn := changes[0].StreamARN
		n := 1
		for n < len(changes) && changes[n].StreamARN == arn {
			n++
		}
		s.stream(arn, changes[0].TableName, string(changes[0].StreamViewType)).append(changes[:n], now)
		changes = changes[n:]
	}
}

// stream returns the stream of arn, made on first use.
func (s *Server) stream(arn, table, viewType string) *stream {
	s.mu.Lock()
	defer s.mu.Unlock()
	st, ok := s.streams[arn]
	if !ok {
		st = newStream(table, arn, viewType, s.cfg)
		s.streams[arn] = st
	}
	return st
}

// ExpireNow runs the Time to Live process once, at the clock's time: it
// deletes every item whose TTL has passed (DynamoDB does it within days;
// the sweep here every TTLSweepInterval), each with a REMOVE stream record
// whose userIdentity is TTLIdentity. It returns how many it deleted.
func (s *Server) ExpireNow() int {
	if s.ref != nil {
		return s.ref.expire(context.Background(), s.cfg.Clock.Now())
	}
	return s.ddb.ExpireItems(s.cfg.Clock.Now())
}

func (s *Server) sweep(ctx context.Context, finished chan struct{}) {
	defer close(finished)
	for {
		t := s.cfg.Clock.NewTimer(s.cfg.TTLSweepInterval)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C():
			s.ExpireNow()
		}
	}
}
