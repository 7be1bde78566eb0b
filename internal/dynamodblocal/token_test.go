package dynamodblocal

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// cutTransport lets every request through and, for the first cut requests
// of an operation, reads the server's whole answer (so the server has
// applied the request) and then fails as a connection reset by the peer
// does: the SDK's standard retryer sends the call again.
type cutTransport struct {
	op   string
	next http.RoundTripper

	mu     sync.Mutex
	cut    int      // answers still to cut
	tokens []string // the ClientRequestToken of each request of op, in order
}

func (c *cutTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Header.Get("X-Amz-Target") != "DynamoDB_20120810."+c.op {
		return c.next.RoundTrip(req)
	}
	body, err := io.ReadAll(req.Body)
	if err != nil {
		return nil, err
	}
	req.Body = io.NopCloser(bytes.NewReader(body))
	resp, err := c.next.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	c.tokens = append(c.tokens, clientRequestToken(body))
	cutThis := c.cut > 0
	if cutThis {
		c.cut--
	}
	c.mu.Unlock()
	if !cutThis {
		return resp, nil
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	return nil, &net.OpError{Op: "read", Net: "tcp", Err: syscall.ECONNRESET}
}

func (c *cutTransport) sent() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.tokens...)
}

// addOne is a transaction adding 1 to run id's n while n is below 5; the
// SDK fills its ClientRequestToken unless token is set.
func addOne(id, token string) *dynamodb.TransactWriteItemsInput {
	in := &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{{Update: &types.Update{
		TableName:                 aws.String("runs"),
		Key:                       map[string]types.AttributeValue{"runId": str(id)},
		UpdateExpression:          aws.String("ADD n :one"),
		ConditionExpression:       aws.String("attribute_not_exists(n) OR n < :five"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":one": num("1"), ":five": num("5")},
	}}}}
	if token != "" {
		in.ClientRequestToken = aws.String(token)
	}
	return in
}

func (ts *testServer) counter(t *testing.T, id string) string {
	t.Helper()
	out, err := ts.db.GetItem(context.Background(), &dynamodb.GetItemInput{
		TableName: aws.String("runs"), Key: map[string]types.AttributeValue{"runId": str(id)}, ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		t.Fatal(err)
	}
	n, _ := out.Item["n"].(*types.AttributeValueMemberN)
	if n == nil {
		return ""
	}
	return n.Value
}

// admit is a transaction as the admission's: it puts run id if it is not
// there yet and counts it on the "day" item.
func admit(id string) *dynamodb.TransactWriteItemsInput {
	return &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{
		{Put: &types.Put{
			TableName: aws.String("runs"), Item: run(id),
			ConditionExpression: aws.String("attribute_not_exists(runId)"),
		}},
		{Update: &types.Update{
			TableName: aws.String("runs"), Key: map[string]types.AttributeValue{"runId": str("day")},
			UpdateExpression: aws.String("ADD n :one"), ExpressionAttributeValues: map[string]types.AttributeValue{":one": num("1")},
		}},
	}}
}

// TestLostTransactionResponseRetriedWithItsToken: a transaction that the
// server applied but whose answer never reached the client is sent again by
// the SDK's retryer with the same ClientRequestToken; the retry succeeds
// (DynamoDB's answer; without the token its condition would cancel it) and
// the transaction counts once, its stream records once.
func TestLostTransactionResponseRetriedWithItsToken(t *testing.T) {
	ts := newTestServer(t, Config{})
	ctx := context.Background()
	calls := ts.subscribe(t, "runs", MappingConfig{StartingPosition: "LATEST"}, nil)
	cut := &cutTransport{op: "TransactWriteItems", next: http.DefaultTransport, cut: 1}
	db := ts.Client(func(o *dynamodb.Options) {
		o.HTTPClient = &http.Client{Transport: cut}
		o.Retryer = retry.NewStandard(func(so *retry.StandardOptions) { so.Backoff = noBackoff{} })
	})

	if _, err := db.TransactWriteItems(ctx, admit("r1")); err != nil {
		t.Fatalf("the SDK's retry of a transaction whose answer was lost: %v", err)
	}
	sent := cut.sent()
	if len(sent) != 2 || sent[0] == "" || sent[0] != sent[1] {
		t.Fatalf("requests' tokens %q, want two with one token", sent)
	}
	if got := ts.counter(t, "day"); got != "1" {
		t.Errorf("n = %q after one transaction sent twice, want 1", got)
	}
	if got := records(t, calls, 2); got[0].EventName != "INSERT" || got[1].EventName != "INSERT" {
		t.Errorf("records %+v", got)
	}
	// A new call is a new transaction (the SDK gives it a new token), and
	// its condition fails.
	_, err := db.TransactWriteItems(ctx, admit("r1"))
	if cancelled := (*types.TransactionCanceledException)(nil); !errors.As(err, &cancelled) {
		t.Errorf("a new call of an applied transaction: %v, want TransactionCanceledException", err)
	}
	if got := ts.counter(t, "day"); got != "1" {
		t.Errorf("n = %q after a cancelled call, want 1", got)
	}
	none(t, calls)
}

// TestClientRequestTokenWindowOnTheServersClock: the token is remembered for
// 10 minutes of the server's clock after the first call completed; a
// changed call with it is IdempotentParameterMismatchException.
func TestClientRequestTokenWindowOnTheServersClock(t *testing.T) {
	EmbeddedOnly(t, "DynamoDB Local keeps a token's 10 minutes on its own clock")
	ts := newTestServer(t, Config{})
	ctx := context.Background()

	for range 2 {
		if _, err := ts.db.TransactWriteItems(ctx, addOne("r1", "tok")); err != nil {
			t.Fatal(err)
		}
	}
	_, err := ts.db.TransactWriteItems(ctx, addOne("r2", "tok"))
	if mismatch := (*types.IdempotentParameterMismatchException)(nil); !errors.As(err, &mismatch) {
		t.Fatalf("same token, other item: %v, want IdempotentParameterMismatchException", err)
	}
	ts.clock.Advance(10*time.Minute - time.Nanosecond)
	if _, err := ts.db.TransactWriteItems(ctx, addOne("r1", "tok")); err != nil {
		t.Fatal(err)
	}
	if got := ts.counter(t, "r1"); got != "1" {
		t.Errorf("n = %q within the window, want 1", got)
	}
	ts.clock.Advance(time.Nanosecond)
	if _, err := ts.db.TransactWriteItems(ctx, addOne("r1", "tok")); err != nil {
		t.Fatal(err)
	}
	if got := ts.counter(t, "r1"); got != "2" {
		t.Errorf("n = %q once the window passed, want 2", got)
	}
}

// clientRequestToken is a TransactWriteItems request body's token.
func clientRequestToken(body []byte) string {
	var in struct{ ClientRequestToken string }
	_ = json.Unmarshal(body, &in)
	return in.ClientRequestToken
}

type noBackoff struct{}

func (noBackoff) BackoffDelay(int, error) (time.Duration, error) { return 0, nil }
