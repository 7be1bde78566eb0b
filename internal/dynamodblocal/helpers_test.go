package dynamodblocal

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/commonly/runtime/shared/store"
	"github.com/commonly/runtime/shared/syncbuf"
)

var testTables = store.Tables{State: "state", Runs: "runs"}

// t0 is the manual clock's start.
var t0 = time.Date(2026, 12, 2, 10, 30, 15, 500_000_000, time.UTC)

// testServer is a server with the runtime's tables on a manual clock,
// without the periodic TTL sweep (tests call ExpireNow or set it), its log
// in a buffer.
type testServer struct {
	*Server
	clock *ManualClock
	log   *syncbuf.Buffer
	db    *dynamodb.Client
}

func newTestServer(t *testing.T, cfg Config) *testServer {
	t.Helper()
	ts := &testServer{clock: NewManualClock(t0), log: &syncbuf.Buffer{}}
	cfg.Clock = ts.clock
	cfg.Log = slog.New(slog.NewJSONHandler(ts.log, nil))
	if cfg.TTLSweepInterval == 0 {
		cfg.TTLSweepInterval = -1
	}
	srv, err := NewWithTables(context.Background(), cfg, testTables)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := srv.Close(); err != nil {
			t.Error(err)
		}
	})
	ts.Server, ts.db = srv, srv.Client()
	return ts
}

// invocation is one call of a subscribed handler.
type invocation struct {
	ctx   context.Context
	event events.DynamoDBEvent
}

// subscribe maps table's stream to a handler that passes each invocation
// to the returned channel and answers with respond (nil: success).
func (ts *testServer) subscribe(t *testing.T, table string, cfg MappingConfig, respond func(n int, ev events.DynamoDBEvent) (events.DynamoDBEventResponse, error)) <-chan invocation {
	t.Helper()
	calls := make(chan invocation, 100)
	n := 0
	stop, err := ts.Subscribe(context.Background(), table, func(ctx context.Context, ev events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
		n++
		calls <- invocation{ctx, ev}
		if respond == nil {
			return events.DynamoDBEventResponse{}, nil
		}
		return respond(n, ev)
	}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	return calls
}

// next waits for the next invocation. The timeout only bounds a failing
// test; nothing waits on it to synchronise.
func next(t *testing.T, calls <-chan invocation) invocation {
	t.Helper()
	select {
	case c := <-calls:
		return c
	case <-time.After(20 * time.Second):
		t.Fatal("no invocation")
		return invocation{}
	}
}

// none says no invocation is waiting in calls now.
func none(t *testing.T, calls <-chan invocation) {
	t.Helper()
	select {
	case c := <-calls:
		t.Fatalf("unexpected invocation with %d records", len(c.event.Records))
	default:
	}
}

// records waits for invocations until n records have come.
func records(t *testing.T, calls <-chan invocation, n int) []events.DynamoDBEventRecord {
	t.Helper()
	var out []events.DynamoDBEventRecord
	for len(out) < n {
		out = append(out, next(t, calls).event.Records...)
	}
	if len(out) != n {
		t.Fatalf("%d records, want %d", len(out), n)
	}
	return out
}

func str(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }
func num(v string) types.AttributeValue { return &types.AttributeValueMemberN{Value: v} }

func (ts *testServer) put(t *testing.T, table string, item map[string]types.AttributeValue) {
	t.Helper()
	if _, err := ts.db.PutItem(context.Background(), &dynamodb.PutItemInput{TableName: aws.String(table), Item: item}); err != nil {
		t.Fatal(err)
	}
}

// run is an item of the runs table.
func run(id string, attrs ...string) map[string]types.AttributeValue {
	item := map[string]types.AttributeValue{"runId": str(id)}
	for i := 0; i+1 < len(attrs); i += 2 {
		item[attrs[i]] = str(attrs[i+1])
	}
	return item
}
