package server

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"
	"github.com/stretchr/testify/require"
)

// refusalClient is a client with a "things" table (hash key id) whose
// global index "byOwner" (owner, since) projects the keys only.
func refusalClient(t *testing.T) *Client {
	t.Helper()

	cli := NewClient()
	sAttr := func(name string) ddbtypes.AttributeDefinition {
		return ddbtypes.AttributeDefinition{AttributeName: aws.String(name), AttributeType: ddbtypes.ScalarAttributeTypeS}
	}
	_, err := cli.CreateTable(context.Background(), &CreateTableInput{
		TableName:            aws.String("things"),
		BillingMode:          ddbtypes.BillingModePayPerRequest,
		AttributeDefinitions: []ddbtypes.AttributeDefinition{sAttr("id"), sAttr("owner"), sAttr("since")},
		KeySchema:            []ddbtypes.KeySchemaElement{{AttributeName: aws.String("id"), KeyType: ddbtypes.KeyTypeHash}},
		GlobalSecondaryIndexes: []ddbtypes.GlobalSecondaryIndex{{
			IndexName: aws.String("byOwner"),
			KeySchema: []ddbtypes.KeySchemaElement{
				{AttributeName: aws.String("owner"), KeyType: ddbtypes.KeyTypeHash},
				{AttributeName: aws.String("since"), KeyType: ddbtypes.KeyTypeRange},
			},
			Projection: &ddbtypes.Projection{ProjectionType: ddbtypes.ProjectionTypeKeysOnly},
		}},
	})
	require.NoError(t, err)

	return cli
}

func sv(v string) *AttributeValue { return &AttributeValue{S: aws.String(v)} }
func nv(v string) *AttributeValue { return &AttributeValue{N: aws.String(v)} }

// refusedWith asserts err is a ValidationException whose message holds want.
func refusedWith(t *testing.T, err error, want string) {
	t.Helper()

	var api smithy.APIError
	require.True(t, errors.As(err, &api), "%v", err)
	require.Equal(t, "ValidationException", api.ErrorCode())
	require.Contains(t, api.ErrorMessage(), want)
}

func TestRefusedNames(t *testing.T) {
	cli := refusalClient(t)
	_, err := cli.CreateTable(context.Background(), &CreateTableInput{
		TableName:            aws.String("ab"),
		AttributeDefinitions: []ddbtypes.AttributeDefinition{{AttributeName: aws.String("id"), AttributeType: ddbtypes.ScalarAttributeTypeS}},
		KeySchema:            []ddbtypes.KeySchemaElement{{AttributeName: aws.String("id"), KeyType: ddbtypes.KeyTypeHash}},
	})
	refusedWith(t, err, "Invalid table/index name")
}

func TestReservedWordBeforeTheCondition(t *testing.T) {
	ctx := context.Background()
	cli := refusalClient(t)
	_, err := cli.PutItem(ctx, &PutItemInput{TableName: aws.String("things"), Item: map[string]*AttributeValue{"id": sv("a"), "n": nv("1")}})
	require.NoError(t, err)

	// The condition would fail; the reserved word is reported.
	_, err = cli.UpdateItem(ctx, &UpdateItemInput{TableName: aws.String("things"), Key: map[string]*AttributeValue{"id": sv("a")},
		UpdateExpression: aws.String("SET status = :s"), ConditionExpression: aws.String("n > :five"),
		ExpressionAttributeValues: map[string]*AttributeValue{":s": sv("x"), ":five": nv("5")}})
	refusedWith(t, err, "Invalid UpdateExpression: Attribute name is a reserved keyword; reserved keyword: status")

	// In a condition, a projection, a transaction; a function's name and a placeholder are not names.
	_, err = cli.DeleteItem(ctx, &DeleteItemInput{TableName: aws.String("things"), Key: map[string]*AttributeValue{"id": sv("a")},
		ConditionExpression: aws.String("attribute_exists(data)")})
	refusedWith(t, err, "Invalid ConditionExpression: Attribute name is a reserved keyword; reserved keyword: data")
	_, err = cli.GetItem(ctx, &GetItemInput{TableName: aws.String("things"), Key: map[string]*AttributeValue{"id": sv("a")}, ProjectionExpression: aws.String("id, name")})
	refusedWith(t, err, "Invalid ProjectionExpression")
	_, err = cli.TransactWriteItems(ctx, &TransactWriteItemsInput{TransactItems: []TransactWriteItem{{Update: &Update{
		TableName: aws.String("things"), Key: map[string]*AttributeValue{"id": sv("a")},
		UpdateExpression: aws.String("SET m.count = :one"), ExpressionAttributeValues: map[string]*AttributeValue{":one": nv("1")},
	}}}})
	refusedWith(t, err, "reserved keyword: count")
	_, err = cli.UpdateItem(ctx, &UpdateItemInput{TableName: aws.String("things"), Key: map[string]*AttributeValue{"id": sv("a")},
		UpdateExpression: aws.String("SET #s = :s"), ConditionExpression: aws.String("size(id) > :zero AND attribute_exists(n)"),
		ExpressionAttributeNames:  map[string]string{"#s": "status"},
		ExpressionAttributeValues: map[string]*AttributeValue{":s": sv("x"), ":zero": nv("0")}})
	require.NoError(t, err)
}

func TestOverlappingUpdatePaths(t *testing.T) {
	ctx := context.Background()
	cli := refusalClient(t)

	for expr, want := range map[string]string{
		"SET a = :v, a.b = :v":           "Two document paths overlap with each other; must remove or rewrite one of these paths; path one: [a], path two: [a, b]",
		"SET #x = :v REMOVE a":           "Two document paths conflict with each other; must remove or rewrite one of these paths; path one: [a], path two: [a]",
		"SET l[0] = :v REMOVE l[0].c":    "path one: [l, [0]], path two: [l, [0], c]",
		"SET a.b = :v, a.c = :v, d = :v": "",
	} {
		_, err := cli.UpdateItem(ctx, &UpdateItemInput{TableName: aws.String("things"), Key: map[string]*AttributeValue{"id": sv(expr)},
			UpdateExpression: aws.String(expr), ExpressionAttributeNames: aliasesOf(expr, map[string]string{"#x": "a"}),
			ExpressionAttributeValues: map[string]*AttributeValue{":v": nv("1")}})
		if want == "" {
			if err != nil {
				refusedWith(t, err, "document path") // a path into a missing map: not an overlap
			}

			continue
		}

		refusedWith(t, err, want)
	}
}

func aliasesOf(expr string, all map[string]string) map[string]string {
	out := map[string]string{}

	for k, v := range all {
		if strings.Contains(expr, k) {
			out[k] = v
		}
	}

	return out
}

func TestQueriesDynamoDBRefuses(t *testing.T) {
	ctx := context.Background()
	cli := refusalClient(t)
	query := func(in QueryInput) error {
		in.TableName = aws.String("things")
		_, err := cli.Query(ctx, &in)

		return err
	}
	vals := map[string]*AttributeValue{":v": sv("x")}

	refusedWith(t, query(QueryInput{KeyConditionExpression: aws.String("begins_with(id, :v)"), ExpressionAttributeValues: vals}), "Query key condition not supported")
	refusedWith(t, query(QueryInput{IndexName: aws.String("byOwner"), KeyConditionExpression: aws.String("since > :v"), ExpressionAttributeValues: vals}),
		"Query condition missed key schema element: owner")
	refusedWith(t, query(QueryInput{IndexName: aws.String("byOwner"), KeyConditionExpression: aws.String("#o = :v"), ConsistentRead: aws.Bool(true),
		ExpressionAttributeNames: map[string]string{"#o": "owner"}, ExpressionAttributeValues: vals}), "Consistent reads are not supported on global secondary indexes")
	refusedWith(t, query(QueryInput{IndexName: aws.String("byOwner"), KeyConditionExpression: aws.String("#o = :v"), Select: ddbtypes.SelectAllAttributes,
		ExpressionAttributeNames: map[string]string{"#o": "owner"}, ExpressionAttributeValues: vals}), "Select type ALL_ATTRIBUTES is not supported for global secondary index byOwner")
	refusedWith(t, query(QueryInput{IndexName: aws.String("byOwner"), KeyConditionExpression: aws.String("#o = :v"), ProjectionExpression: aws.String("id, since, colour.x"),
		ExpressionAttributeNames: map[string]string{"#o": "owner"}, ExpressionAttributeValues: vals}), "Global secondary index byOwner does not project [colour]")
	require.NoError(t, query(QueryInput{IndexName: aws.String("byOwner"), KeyConditionExpression: aws.String("#o = :v AND since > :v"), ProjectionExpression: aws.String("id, #o"),
		ExpressionAttributeNames: map[string]string{"#o": "owner"}, ExpressionAttributeValues: vals}))
	require.NoError(t, query(QueryInput{KeyConditionExpression: aws.String(":v = id"), ExpressionAttributeValues: vals, ConsistentRead: aws.Bool(true)}))

	_, err := cli.Scan(ctx, &ScanInput{TableName: aws.String("things"), IndexName: aws.String("byOwner"), ConsistentRead: aws.Bool(true)})
	refusedWith(t, err, "Consistent reads are not supported on global secondary indexes")
}

func TestItemsDynamoDBRefuses(t *testing.T) {
	ctx := context.Background()
	cli := refusalClient(t)
	key := map[string]*AttributeValue{"id": sv("a")}

	// 400 KB by DynamoDB's rule is stored; a byte more is not.
	size := 400*1024 - len("id") - len("a") - len("blob")
	_, err := cli.PutItem(ctx, &PutItemInput{TableName: aws.String("things"), Item: map[string]*AttributeValue{"id": sv("a"), "blob": sv(strings.Repeat("x", size))}})
	require.NoError(t, err)
	_, err = cli.PutItem(ctx, &PutItemInput{TableName: aws.String("things"), Item: map[string]*AttributeValue{"id": sv("b"), "blob": sv(strings.Repeat("x", size+1))}})
	refusedWith(t, err, "Item size has exceeded the maximum allowed size")

	// An update past the limit changes nothing.
	_, err = cli.UpdateItem(ctx, &UpdateItemInput{TableName: aws.String("things"), Key: key,
		UpdateExpression: aws.String("SET more = :m"), ExpressionAttributeValues: map[string]*AttributeValue{":m": sv("y")}})
	refusedWith(t, err, "Item size to update has exceeded the maximum allowed size")
	out, err := cli.GetItem(ctx, &GetItemInput{TableName: aws.String("things"), Key: key})
	require.NoError(t, err)
	require.Nil(t, out.Item["more"])
	require.Len(t, *out.Item["blob"].S, size)

	// An empty string as an index key, put or updated.
	_, err = cli.PutItem(ctx, &PutItemInput{TableName: aws.String("things"), Item: map[string]*AttributeValue{"id": sv("c"), "owner": sv(""), "since": sv("1")}})
	refusedWith(t, err, "IndexName: byOwner, IndexKey: owner")
	_, err = cli.UpdateItem(ctx, &UpdateItemInput{TableName: aws.String("things"), Key: map[string]*AttributeValue{"id": sv("c")},
		UpdateExpression: aws.String("SET #o = :e"), ExpressionAttributeNames: map[string]string{"#o": "owner"}, ExpressionAttributeValues: map[string]*AttributeValue{":e": sv("")}})
	refusedWith(t, err, "IndexName: byOwner, IndexKey: owner")
}

func TestBatchesDynamoDBRefuses(t *testing.T) {
	ctx := context.Background()
	cli := refusalClient(t)

	_, err := cli.BatchGetItem(ctx, &BatchGetItemInput{RequestItems: map[string]KeysAndAttributes{
		"things": {Keys: []map[string]*AttributeValue{{"id": sv("a")}, {"id": sv("a")}}},
	}})
	refusedWith(t, err, "Provided list of item keys contains duplicates")

	items := make([]TransactWriteItem, 101)
	for i := range items {
		items[i] = TransactWriteItem{Put: &Put{TableName: aws.String("things"), Item: map[string]*AttributeValue{"id": sv(strconv.Itoa(i))}}}
	}

	_, err = cli.TransactWriteItems(ctx, &TransactWriteItemsInput{TransactItems: items})
	refusedWith(t, err, "Member must have length less than or equal to 100")
	_, err = cli.TransactWriteItems(ctx, &TransactWriteItemsInput{TransactItems: items[:100]})
	require.NoError(t, err)
}
