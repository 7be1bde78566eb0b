package server

import (
	"context"
	"errors"
	"fmt"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/require"
)

func s(v string) ddbtypes.AttributeValue { return &ddbtypes.AttributeValueMemberS{Value: v} }
func n(v string) ddbtypes.AttributeValue { return &ddbtypes.AttributeValueMemberN{Value: v} }

// streamServer starts a server with a "things" table (hash key id) whose
// stream is NEW_AND_OLD_IMAGES, and records what the listener receives.
func streamServer(t *testing.T) (*Server, *dynamodb.Client, *[][]ItemChange) {
	t.Helper()

	srv := NewServer(WithRegion("eu-west-1"), WithAccountID("123456789012"))
	ts := httptest.NewServer(srv)
	t.Cleanup(ts.Close)

	cli := newTestDynamoClient(t, ts.URL)
	_, err := cli.CreateTable(context.Background(), &dynamodb.CreateTableInput{
		TableName:            aws.String("things"),
		KeySchema:            []ddbtypes.KeySchemaElement{{AttributeName: aws.String("id"), KeyType: ddbtypes.KeyTypeHash}},
		AttributeDefinitions: []ddbtypes.AttributeDefinition{{AttributeName: aws.String("id"), AttributeType: ddbtypes.ScalarAttributeTypeS}},
		BillingMode:          ddbtypes.BillingModePayPerRequest,
		StreamSpecification:  &ddbtypes.StreamSpecification{StreamEnabled: aws.Bool(true), StreamViewType: ddbtypes.StreamViewTypeNewAndOldImages},
	})
	require.NoError(t, err)

	var got [][]ItemChange

	srv.OnItemChanges(func(c []ItemChange) { got = append(got, c) })

	return srv, cli, &got
}

func TestItemChangesOfSingleWrites(t *testing.T) {
	c := require.New(t)
	ctx := context.Background()
	_, cli, got := streamServer(t)
	table := aws.String("things")

	out, err := cli.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: table})
	c.NoError(err)
	arn := aws.ToString(out.Table.LatestStreamArn)
	c.Equal("arn:aws:dynamodb:eu-west-1:123456789012:table/things/stream/"+aws.ToString(out.Table.LatestStreamLabel), arn)
	c.Equal(ddbtypes.StreamViewTypeNewAndOldImages, out.Table.StreamSpecification.StreamViewType)

	_, err = cli.PutItem(ctx, &dynamodb.PutItemInput{TableName: table, Item: map[string]ddbtypes.AttributeValue{"id": s("a"), "n": n("1"), "l": &ddbtypes.AttributeValueMemberL{Value: []ddbtypes.AttributeValue{}}}})
	c.NoError(err)
	// The same item again, and 1.0 for 1: nothing changed, no change.
	_, err = cli.PutItem(ctx, &dynamodb.PutItemInput{TableName: table, Item: map[string]ddbtypes.AttributeValue{"id": s("a"), "n": n("1.0"), "l": &ddbtypes.AttributeValueMemberL{Value: []ddbtypes.AttributeValue{}}}})
	c.NoError(err)
	_, err = cli.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: table, Key: map[string]ddbtypes.AttributeValue{"id": s("a")},
		UpdateExpression: aws.String("ADD n :one"), ExpressionAttributeValues: map[string]ddbtypes.AttributeValue{":one": n("1")}})
	c.NoError(err)
	// A failed condition changes nothing.
	_, err = cli.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: table, Key: map[string]ddbtypes.AttributeValue{"id": s("a")},
		UpdateExpression: aws.String("ADD n :one"), ConditionExpression: aws.String("n > :one"), ExpressionAttributeValues: map[string]ddbtypes.AttributeValue{":one": n("5")}})
	var ccf *ddbtypes.ConditionalCheckFailedException
	c.True(errors.As(err, &ccf), "%v", err)
	_, err = cli.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: table, Key: map[string]ddbtypes.AttributeValue{"id": s("a")}})
	c.NoError(err)
	// Deleting what is not there changes nothing.
	_, err = cli.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: table, Key: map[string]ddbtypes.AttributeValue{"id": s("a")}})
	c.NoError(err)

	c.Len(*got, 3)
	insert, modify, remove := (*got)[0][0], (*got)[1][0], (*got)[2][0]
	c.Equal(ItemChange{TableName: "things", StreamARN: arn, StreamViewType: ddbtypes.StreamViewTypeNewAndOldImages,
		Keys:     map[string]ddbtypes.AttributeValue{"id": s("a")},
		NewImage: map[string]ddbtypes.AttributeValue{"id": s("a"), "n": n("1"), "l": &ddbtypes.AttributeValueMemberL{Value: []ddbtypes.AttributeValue{}}},
	}, insert)
	// The second put stored n as it was written (minidyn does not normalise numbers).
	c.Equal(n("1.0"), modify.OldImage["n"])
	c.Equal(n("2"), modify.NewImage["n"])
	c.Equal(modify.NewImage, remove.OldImage)
	c.Nil(remove.NewImage)
	c.False(remove.Expired)
}

func TestTransactionReportsEveryFailedConditionAndChangesNothing(t *testing.T) {
	c := require.New(t)
	ctx := context.Background()
	_, cli, got := streamServer(t)
	table := aws.String("things")

	for _, id := range []string{"a", "b"} {
		_, err := cli.PutItem(ctx, &dynamodb.PutItemInput{TableName: table, Item: map[string]ddbtypes.AttributeValue{"id": s(id)}})
		c.NoError(err)
	}

	*got = nil
	create := func(id string) ddbtypes.TransactWriteItem {
		return ddbtypes.TransactWriteItem{Put: &ddbtypes.Put{TableName: table, Item: map[string]ddbtypes.AttributeValue{"id": s(id), "v": n("1")},
			ConditionExpression: aws.String("attribute_not_exists(id)"), ReturnValuesOnConditionCheckFailure: ddbtypes.ReturnValuesOnConditionCheckFailureAllOld}}
	}
	_, err := cli.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []ddbtypes.TransactWriteItem{create("a"), create("c"), create("b")}})

	var tce *ddbtypes.TransactionCanceledException
	c.True(errors.As(err, &tce), "%v", err)
	c.Equal("Transaction cancelled, please refer cancellation reasons for specific reasons [ConditionalCheckFailed, None, ConditionalCheckFailed]", aws.ToString(tce.Message))
	c.Len(tce.CancellationReasons, 3)
	c.Equal("None", aws.ToString(tce.CancellationReasons[1].Code))
	c.Nil(tce.CancellationReasons[1].Message)

	for _, i := range []int{0, 2} {
		c.Equal("ConditionalCheckFailed", aws.ToString(tce.CancellationReasons[i].Code))
		c.Equal("The conditional request failed", aws.ToString(tce.CancellationReasons[i].Message))
		c.Len(tce.CancellationReasons[i].Item, 1)
	}

	item, err := cli.GetItem(ctx, &dynamodb.GetItemInput{TableName: table, Key: map[string]ddbtypes.AttributeValue{"id": s("c")}})
	c.NoError(err)
	c.Empty(item.Item)
	c.Empty(*got)
}

func TestTransactionUndoesItsWritesWhenALaterOneFails(t *testing.T) {
	c := require.New(t)
	ctx := context.Background()
	_, cli, got := streamServer(t)
	table := aws.String("things")

	_, err := cli.PutItem(ctx, &dynamodb.PutItemInput{TableName: table, Item: map[string]ddbtypes.AttributeValue{"id": s("a"), "v": n("1")}})
	c.NoError(err)
	_, err = cli.PutItem(ctx, &dynamodb.PutItemInput{TableName: table, Item: map[string]ddbtypes.AttributeValue{"id": s("b"), "v": s("text")}})
	c.NoError(err)

	*got = nil
	// The third item's ADD meets a string: it fails after the first two wrote.
	_, err = cli.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []ddbtypes.TransactWriteItem{
		{Update: &ddbtypes.Update{TableName: table, Key: map[string]ddbtypes.AttributeValue{"id": s("a")}, UpdateExpression: aws.String("SET v = :two"),
			ExpressionAttributeValues: map[string]ddbtypes.AttributeValue{":two": n("2")}}},
		{Put: &ddbtypes.Put{TableName: table, Item: map[string]ddbtypes.AttributeValue{"id": s("new")}}},
		{Update: &ddbtypes.Update{TableName: table, Key: map[string]ddbtypes.AttributeValue{"id": s("b")}, UpdateExpression: aws.String("ADD v :two"),
			ExpressionAttributeValues: map[string]ddbtypes.AttributeValue{":two": n("2")}}},
	}})
	c.Error(err)

	a, err := cli.GetItem(ctx, &dynamodb.GetItemInput{TableName: table, Key: map[string]ddbtypes.AttributeValue{"id": s("a")}})
	c.NoError(err)
	c.Equal(n("1"), a.Item["v"])
	created, err := cli.GetItem(ctx, &dynamodb.GetItemInput{TableName: table, Key: map[string]ddbtypes.AttributeValue{"id": s("new")}})
	c.NoError(err)
	c.Empty(created.Item)
	scan, err := cli.Scan(ctx, &dynamodb.ScanInput{TableName: table})
	c.NoError(err)
	c.Len(scan.Items, 2)
	c.Empty(*got)

	// A transaction that commits: its items' changes together, in item order.
	_, err = cli.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []ddbtypes.TransactWriteItem{
		{Put: &ddbtypes.Put{TableName: table, Item: map[string]ddbtypes.AttributeValue{"id": s("new")}}},
		{ConditionCheck: &ddbtypes.ConditionCheck{TableName: table, Key: map[string]ddbtypes.AttributeValue{"id": s("b")}, ConditionExpression: aws.String("attribute_exists(id)")}},
		{Delete: &ddbtypes.Delete{TableName: table, Key: map[string]ddbtypes.AttributeValue{"id": s("a")}}},
	}})
	c.NoError(err)
	c.Len(*got, 1)
	c.Len((*got)[0], 2)
	c.Equal(s("new"), (*got)[0][0].Keys["id"])
	c.Nil((*got)[0][0].OldImage)
	c.Equal(s("a"), (*got)[0][1].Keys["id"])
	c.Nil((*got)[0][1].NewImage)
}

func TestTimeToLive(t *testing.T) {
	c := require.New(t)
	ctx := context.Background()
	srv, cli, got := streamServer(t)
	table := aws.String("things")

	desc, err := cli.DescribeTimeToLive(ctx, &dynamodb.DescribeTimeToLiveInput{TableName: table})
	c.NoError(err)
	c.Equal(ddbtypes.TimeToLiveStatusDisabled, desc.TimeToLiveDescription.TimeToLiveStatus)

	out, err := cli.UpdateTimeToLive(ctx, &dynamodb.UpdateTimeToLiveInput{TableName: table,
		TimeToLiveSpecification: &ddbtypes.TimeToLiveSpecification{AttributeName: aws.String("ttl"), Enabled: aws.Bool(true)}})
	c.NoError(err)
	c.Equal("ttl", aws.ToString(out.TimeToLiveSpecification.AttributeName))
	_, err = cli.UpdateTimeToLive(ctx, &dynamodb.UpdateTimeToLiveInput{TableName: table,
		TimeToLiveSpecification: &ddbtypes.TimeToLiveSpecification{AttributeName: aws.String("ttl"), Enabled: aws.Bool(true)}})
	c.ErrorContains(err, "already enabled")

	desc, err = cli.DescribeTimeToLive(ctx, &dynamodb.DescribeTimeToLiveInput{TableName: table})
	c.NoError(err)
	c.Equal(ddbtypes.TimeToLiveStatusEnabled, desc.TimeToLiveDescription.TimeToLiveStatus)
	c.Equal("ttl", aws.ToString(desc.TimeToLiveDescription.AttributeName))

	now := time.Unix(2_000_000_000, 0)
	items := map[string]ddbtypes.AttributeValue{
		"past":      n(strconv.FormatInt(now.Unix()-1, 10)),
		"now":       n(strconv.FormatInt(now.Unix(), 10)),
		"future":    n(strconv.FormatInt(now.Unix()+60, 10)),
		"ancient":   n(strconv.FormatInt(now.AddDate(-6, 0, 0).Unix(), 10)),
		"string":    s(strconv.FormatInt(now.Unix()-1, 10)),
		"fractions": n(fmt.Sprintf("%d.5", now.Unix()-1)),
	}

	for id, ttl := range items {
		_, err := cli.PutItem(ctx, &dynamodb.PutItemInput{TableName: table, Item: map[string]ddbtypes.AttributeValue{"id": s(id), "ttl": ttl}})
		c.NoError(err)
	}

	*got = nil
	c.Equal(2, srv.ExpireItems(now))
	c.Len(*got, 2)

	for i, id := range []string{"fractions", "past"} {
		change := (*got)[i][0]
		c.True(change.Expired)
		c.Equal(s(id), change.Keys["id"])
		c.Nil(change.NewImage)
		c.Equal(items[id], change.OldImage["ttl"])
	}

	scan, err := cli.Scan(ctx, &dynamodb.ScanInput{TableName: table})
	c.NoError(err)
	c.Len(scan.Items, 4)
	c.Zero(srv.ExpireItems(now))
}

// BenchmarkTransactWriteItems is the cost of one transaction (a counter
// update and a new item) with 100 and 10,000 items stored: the same.
func BenchmarkTransactWriteItems(b *testing.B) {
	for _, stored := range []int{100, 10_000} {
		b.Run(fmt.Sprintf("stored=%d", stored), func(b *testing.B) {
			cl := NewClient()
			ctx := context.Background()
			_, err := cl.CreateTable(ctx, &CreateTableInput{
				TableName:            aws.String("things"),
				KeySchema:            []ddbtypes.KeySchemaElement{{AttributeName: aws.String("id"), KeyType: ddbtypes.KeyTypeHash}},
				AttributeDefinitions: []ddbtypes.AttributeDefinition{{AttributeName: aws.String("id"), AttributeType: ddbtypes.ScalarAttributeTypeS}},
				BillingMode:          ddbtypes.BillingModePayPerRequest,
			})
			require.NoError(b, err)

			str := func(v string) *AttributeValue { return &AttributeValue{S: aws.String(v)} }
			for i := range stored {
				_, err := cl.PutItem(ctx, &PutItemInput{TableName: aws.String("things"), Item: map[string]*AttributeValue{
					"id": str(fmt.Sprint("stored-", i)), "body": str("a stored item of some size, like a run with its steps"),
				}})
				require.NoError(b, err)
			}

			i := 0
			for b.Loop() {
				i++
				_, err := cl.TransactWriteItems(ctx, &TransactWriteItemsInput{TransactItems: []TransactWriteItem{
					{Update: &Update{TableName: aws.String("things"), Key: map[string]*AttributeValue{"id": str("counter")},
						UpdateExpression: aws.String("ADD c :one"), ExpressionAttributeValues: map[string]*AttributeValue{":one": {N: aws.String("1")}}}},
					{Put: &Put{TableName: aws.String("things"), Item: map[string]*AttributeValue{"id": str(fmt.Sprint("new-", i))},
						ConditionExpression: aws.String("attribute_not_exists(id)")}},
				}})
				if err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
