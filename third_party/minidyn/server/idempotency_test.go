package server

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/require"
)

// testClock is a clock the test moves while the server reads it.
type testClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *testClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()

	return c.now
}

func (c *testClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()

	c.now = c.now.Add(d)
}

// tokenServer is a server with a "things" table on a clock the test moves.
func tokenServer(t *testing.T) (*dynamodb.Client, *testClock) {
	t.Helper()

	now := &testClock{now: time.Date(2026, 12, 4, 10, 0, 0, 0, time.UTC)}
	ts := httptest.NewServer(NewServer(WithClock(now.Now)))
	t.Cleanup(ts.Close)

	cli := newTestDynamoClient(t, ts.URL)
	_, err := cli.CreateTable(context.Background(), &dynamodb.CreateTableInput{
		TableName:            aws.String("things"),
		KeySchema:            []ddbtypes.KeySchemaElement{{AttributeName: aws.String("id"), KeyType: ddbtypes.KeyTypeHash}},
		AttributeDefinitions: []ddbtypes.AttributeDefinition{{AttributeName: aws.String("id"), AttributeType: ddbtypes.ScalarAttributeTypeS}},
		BillingMode:          ddbtypes.BillingModePayPerRequest,
	})
	require.NoError(t, err)

	return cli, now
}

// addOne adds 1 to item id's n with token, if n is below 5.
func addOne(token, id string) *dynamodb.TransactWriteItemsInput {
	return &dynamodb.TransactWriteItemsInput{
		ClientRequestToken: aws.String(token),
		TransactItems: []ddbtypes.TransactWriteItem{{Update: &ddbtypes.Update{
			TableName:                 aws.String("things"),
			Key:                       map[string]ddbtypes.AttributeValue{"id": s(id)},
			UpdateExpression:          aws.String("ADD n :one"),
			ConditionExpression:       aws.String("attribute_not_exists(n) OR n < :five"),
			ExpressionAttributeValues: map[string]ddbtypes.AttributeValue{":one": n("1"), ":five": n("5")},
		}}},
	}
}

func counter(t *testing.T, cli *dynamodb.Client, id string) string {
	t.Helper()

	out, err := cli.GetItem(context.Background(), &dynamodb.GetItemInput{
		TableName: aws.String("things"), Key: map[string]ddbtypes.AttributeValue{"id": s(id)}, ConsistentRead: aws.Bool(true),
	})
	require.NoError(t, err)

	if out.Item == nil {
		return ""
	}

	return out.Item["n"].(*ddbtypes.AttributeValueMemberN).Value
}

// A repeat with the token succeeds and is not applied again for 10 minutes
// after the first one completed; then it is a new request.
func TestClientRequestTokenRepeatHasOneEffect(t *testing.T) {
	c := require.New(t)
	ctx := context.Background()
	cli, now := tokenServer(t)

	_, err := cli.TransactWriteItems(ctx, addOne("tok-1", "a"))
	c.NoError(err)
	now.Advance(idempotencyWindow - time.Second)
	_, err = cli.TransactWriteItems(ctx, addOne("tok-1", "a"))
	c.NoError(err)
	c.Equal("1", counter(t, cli, "a"))

	// The window runs from the first one's completion, not the repeat's.
	now.Advance(time.Second)
	_, err = cli.TransactWriteItems(ctx, addOne("tok-1", "a"))
	c.NoError(err)
	c.Equal("2", counter(t, cli, "a"))

	// Another token is another transaction.
	_, err = cli.TransactWriteItems(ctx, addOne("tok-2", "a"))
	c.NoError(err)
	c.Equal("3", counter(t, cli, "a"))
}

// The token with other parameters is refused, and nothing is applied.
func TestClientRequestTokenWithOtherParameters(t *testing.T) {
	c := require.New(t)
	ctx := context.Background()
	cli, now := tokenServer(t)

	_, err := cli.TransactWriteItems(ctx, addOne("tok-1", "a"))
	c.NoError(err)

	_, err = cli.TransactWriteItems(ctx, addOne("tok-1", "b"))
	var mismatch *ddbtypes.IdempotentParameterMismatchException
	c.True(errors.As(err, &mismatch), "%v", err)
	c.Equal("", counter(t, cli, "b"))

	other := addOne("tok-1", "a")
	other.ReturnItemCollectionMetrics = ddbtypes.ReturnItemCollectionMetricsSize
	_, err = cli.TransactWriteItems(ctx, other)
	c.True(errors.As(err, &mismatch), "%v", err)
	c.Equal("1", counter(t, cli, "a"))

	// Past the window the token is free again.
	now.Advance(idempotencyWindow)
	_, err = cli.TransactWriteItems(ctx, addOne("tok-1", "b"))
	c.NoError(err)
	c.Equal("1", counter(t, cli, "b"))
}

// A cancelled transaction leaves no token: applied nothing, so its repeat is
// evaluated again (and fails again while its condition does).
func TestClientRequestTokenOfACancelledTransaction(t *testing.T) {
	c := require.New(t)
	ctx := context.Background()
	cli, _ := tokenServer(t)

	for i := range 5 {
		_, err := cli.TransactWriteItems(ctx, addOne("tok-"+strconv.Itoa(i), "a"))
		c.NoError(err)
	}

	for range 2 {
		_, err := cli.TransactWriteItems(ctx, addOne("tok-full", "a"))
		var cancelled *ddbtypes.TransactionCanceledException
		c.True(errors.As(err, &cancelled), "%v", err)
	}

	c.Equal("5", counter(t, cli, "a"))
}

// The token's length is checked as the API does (1 to 36 characters).
func TestClientRequestTokenLength(t *testing.T) {
	c := require.New(t)
	cli, _ := tokenServer(t)

	_, err := cli.TransactWriteItems(context.Background(), addOne(strings.Repeat("t", 37), "a"))

	var apiErr interface{ ErrorCode() string }
	c.True(errors.As(err, &apiErr), "%v", err)
	c.Equal("ValidationException", apiErr.ErrorCode())
	c.Equal("", counter(t, cli, "a"))

	_, err = cli.TransactWriteItems(context.Background(), addOne(strings.Repeat("t", 36), "a"))
	c.NoError(err)
}

// IdempotentParameterMismatchException is an HTTP 400 with its type.
func TestClientRequestTokenMismatchOnTheWire(t *testing.T) {
	c := require.New(t)
	ts := httptest.NewServer(NewServer())
	t.Cleanup(ts.Close)

	cli := newTestDynamoClient(t, ts.URL)
	_, err := cli.CreateTable(context.Background(), &dynamodb.CreateTableInput{
		TableName:            aws.String("things"),
		KeySchema:            []ddbtypes.KeySchemaElement{{AttributeName: aws.String("id"), KeyType: ddbtypes.KeyTypeHash}},
		AttributeDefinitions: []ddbtypes.AttributeDefinition{{AttributeName: aws.String("id"), AttributeType: ddbtypes.ScalarAttributeTypeS}},
		BillingMode:          ddbtypes.BillingModePayPerRequest,
	})
	c.NoError(err)

	post := func(body string) *http.Response {
		req, err := http.NewRequest(http.MethodPost, ts.URL, strings.NewReader(body))
		c.NoError(err)
		req.Header.Set("X-Amz-Target", "DynamoDB_20120810.TransactWriteItems")
		resp, err := http.DefaultClient.Do(req)
		c.NoError(err)
		t.Cleanup(func() { _ = resp.Body.Close() })

		return resp
	}
	item := func(id string) string {
		return `{"ClientRequestToken":"tok","TransactItems":[{"Put":{"TableName":"things","Item":{"id":{"S":"` + id + `"}}}}]}`
	}

	c.Equal(http.StatusOK, post(item("a")).StatusCode)
	c.Equal(http.StatusOK, post(item("a")).StatusCode)
	resp := post(item("b"))
	c.Equal(http.StatusBadRequest, resp.StatusCode)
	body, err := io.ReadAll(resp.Body)
	c.NoError(err)
	c.Contains(string(body), `"__type":"IdempotentParameterMismatchException"`)
}
