package dynamodblocal

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"github.com/commonly/runtime/shared/store"
	"github.com/commonly/runtime/shared/tablekeys"
)

// outcome is what a server answered a case, as compared: the error's code
// and HTTP status (none on success), the item a failed condition returned,
// each cancelled transaction item's reason, and what the case read back.
type outcome struct {
	Status  int
	Code    string
	Item    map[string]types.AttributeValue
	Reasons []string
	Read    string // what the case read afterwards (its effect), "" if nothing
	message string // logged, not compared: the texts differ
}

func (o outcome) String() string {
	if o.Code == "" {
		return fmt.Sprintf("success, read %q", o.Read)
	}
	return fmt.Sprintf("%d %s %v item=%v, read %q (%s)", o.Status, o.Code, o.Reasons, itemString(o.Item), o.Read, o.message)
}

func itemString(item map[string]types.AttributeValue) string {
	if item == nil {
		return "none"
	}
	return canonicalItem(item)
}

func outcomeOf(err error) outcome {
	if err == nil {
		return outcome{}
	}
	o := outcome{Code: "unknown", message: err.Error()}
	if api := smithy.APIError(nil); errors.As(err, &api) {
		o.Code, o.message = api.ErrorCode(), api.ErrorMessage()
	}
	if re := (*smithyhttp.ResponseError)(nil); errors.As(err, &re) {
		o.Status = re.HTTPStatusCode()
	}
	if ccf := (*types.ConditionalCheckFailedException)(nil); errors.As(err, &ccf) {
		o.Item = ccf.Item
	}
	if tce := (*types.TransactionCanceledException)(nil); errors.As(err, &tce) {
		for _, r := range tce.CancellationReasons {
			o.Reasons = append(o.Reasons, aws.ToString(r.Code))
			if r.Item != nil {
				o.Item = r.Item
			}
		}
	}
	return o
}

// conformanceCase is one request (or a few) sent to both servers.
type conformanceCase struct {
	name string
	// run sends the case's requests to db (its tables just created, empty)
	// and returns the outcome of the one compared.
	run func(ctx context.Context, db *dynamodb.Client, url string) outcome
	// want is the outcome DynamoDB's documentation gives (its code, or ""
	// for a success), which both servers must answer.
	want string
	// departs, if set, says how DynamoDB Local departs from the
	// documentation here: the embedded server is held to want alone.
	departs string
}

// TestConformanceWithDynamoDBLocal sends the same requests to the embedded
// server and to Amazon's DynamoDB Local and compares the answers; each must
// be what DynamoDB's documentation gives. Where the embedded server
// accepted what DynamoDB refuses, it was fixed (third_party/minidyn
// PATCHES.md, 8; docs/local.md). Without DynamoDB Local (the everyday
// run) the embedded server alone is held to the documented answers.
func TestConformanceWithDynamoDBLocal(t *testing.T) {
	url := referenceURL()
	for _, c := range conformanceCases() {
		t.Run(c.name, func(t *testing.T) {
			ctx := context.Background()
			servers := map[string]func() (*Server, error){
				"embedded": func() (*Server, error) { return NewEmbedded(Config{TTLSweepInterval: -1}) },
			}
			if url != "" {
				servers["reference"] = func() (*Server, error) { return NewReference(Config{TTLSweepInterval: -1}, url) }
			}
			got := map[string]outcome{}
			for name, start := range servers {
				s, err := start()
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { _ = s.Close() })
				if err := store.CreateTables(ctx, s.Client(), store.Tables{State: "state", Runs: "runs"}); err != nil {
					t.Fatal(err)
				}
				got[name] = c.run(ctx, s.Client(), s.URL)
				t.Logf("%-9s %v", name+":", got[name])
			}
			e, r := got["embedded"], got["reference"]
			if e.Code != c.want {
				t.Errorf("embedded answered %q, DynamoDB answers %q", e.Code, c.want)
			}
			if url == "" {
				return
			}
			if c.departs != "" {
				t.Logf("DynamoDB Local departs from the documentation: %s", c.departs)
				return
			}
			if r.Code != c.want {
				t.Errorf("DynamoDB Local answered %q, documented %q", r.Code, c.want)
			}
			if e.Status != r.Status || e.Read != r.Read || !reflect.DeepEqual(e.Reasons, r.Reasons) || itemString(e.Item) != itemString(r.Item) {
				t.Errorf("the servers differ:\nembedded:  %v\nreference: %v", e, r)
			}
		})
	}
}

// runItem is an item of the runs table with attrs (name, value pairs).
func runItem(id string, attrs ...types.AttributeValue) map[string]types.AttributeValue {
	item := map[string]types.AttributeValue{tablekeys.RunID: str(id)}
	for i := 0; i+1 < len(attrs); i += 2 {
		item[attrs[i].(*types.AttributeValueMemberS).Value] = attrs[i+1]
	}
	return item
}

// readRun is the run's item as the case's effect, "" if there is none.
func readRun(ctx context.Context, db *dynamodb.Client, id string) string {
	out, err := db.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String("runs"), Key: runItem(id), ConsistentRead: aws.Bool(true)})
	if err != nil {
		return "read: " + err.Error()
	}
	if out.Item == nil {
		return ""
	}
	return canonicalItem(out.Item)
}

// canonicalItem is an item's JSON with its names in order.
func canonicalItem(item map[string]types.AttributeValue) string {
	var m map[string]json.RawMessage
	_ = json.Unmarshal(appendItem(nil, item), &m)
	b, _ := json.Marshal(m) // maps marshal in key order
	return string(b)
}

func putRun(ctx context.Context, db *dynamodb.Client, item map[string]types.AttributeValue) {
	_, _ = db.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String("runs"), Item: item})
}

// transactionOf is a case putting n runs in one transaction; it reads the
// first back.
func transactionOf(n int) func(context.Context, *dynamodb.Client, string) outcome {
	return func(ctx context.Context, db *dynamodb.Client, _ string) outcome {
		items := make([]types.TransactWriteItem, n)
		for i := range items {
			items[i] = types.TransactWriteItem{Put: &types.Put{TableName: aws.String("runs"), Item: runItem("r" + strconv.Itoa(i))}}
		}
		_, err := db.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: items})
		o := outcomeOf(err)
		o.Read = readRun(ctx, db, "r0")
		return o
	}
}

func conformanceCases() []conformanceCase {
	return []conformanceCase{
		{
			name: "an item over 400 KB",
			want: "ValidationException",
			run: func(ctx context.Context, db *dynamodb.Client, _ string) outcome {
				_, err := db.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String("runs"),
					Item: runItem("big", str("blob"), str(strings.Repeat("x", 400*1024)))})
				o := outcomeOf(err)
				o.Read = readRun(ctx, db, "big")
				return o
			},
		},
		{
			name: "an item of 400 KB exactly",
			want: "",
			run: func(ctx context.Context, db *dynamodb.Client, _ string) outcome {
				// runId + "big" + blob + the value: 400 KB by DynamoDB's rule.
				size := 400*1024 - len(tablekeys.RunID) - len("big") - len("blob")
				_, err := db.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String("runs"),
					Item: runItem("big", str("blob"), str(strings.Repeat("x", size)))})
				o := outcomeOf(err)
				if err == nil {
					o.Read = strconv.Itoa(len(readRun(ctx, db, "big")))
				}
				return o
			},
		},
		{
			name: "duplicate keys in BatchGetItem",
			want: "ValidationException",
			run: func(ctx context.Context, db *dynamodb.Client, _ string) outcome {
				putRun(ctx, db, runItem("r1"))
				_, err := db.BatchGetItem(ctx, &dynamodb.BatchGetItemInput{RequestItems: map[string]types.KeysAndAttributes{
					"runs": {Keys: []map[string]types.AttributeValue{runItem("r1"), runItem("r1")}},
				}})
				return outcomeOf(err)
			},
		},
		{
			name: "an empty string as an index key",
			want: "ValidationException",
			run: func(ctx context.Context, db *dynamodb.Client, _ string) outcome {
				_, err := db.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String("runs"),
					Item: runItem("r1", str(tablekeys.OpenPK), str(""), str(tablekeys.OpenSK), str("2026-12-04"))})
				o := outcomeOf(err)
				o.Read = readRun(ctx, db, "r1")
				return o
			},
		},
		{name: "a transaction of 101 items", want: "ValidationException", run: transactionOf(101)},
		{name: "a transaction of 100 items", want: "", run: transactionOf(100)},
		{
			name:    "two operations on one item in a transaction",
			want:    "ValidationException",
			departs: "DynamoDB Local runs both and cancels the transaction ([None, ConditionalCheckFailed]); the API reference refuses a transaction whose actions target one item (ValidationException)",
			run: func(ctx context.Context, db *dynamodb.Client, _ string) outcome {
				_, err := db.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{
					{Put: &types.Put{TableName: aws.String("runs"), Item: runItem("r1")}},
					{ConditionCheck: &types.ConditionCheck{TableName: aws.String("runs"), Key: runItem("r1"), ConditionExpression: aws.String("attribute_not_exists(runId)")}},
				}})
				o := outcomeOf(err)
				o.Read = readRun(ctx, db, "r1")
				return o
			},
		},
		{
			name: "begins_with on a partition key",
			want: "ValidationException",
			run: func(ctx context.Context, db *dynamodb.Client, _ string) outcome {
				putRun(ctx, db, runItem("r1"))
				_, err := db.Query(ctx, &dynamodb.QueryInput{TableName: aws.String("runs"),
					KeyConditionExpression:    aws.String("begins_with(runId, :p)"),
					ExpressionAttributeValues: map[string]types.AttributeValue{":p": str("r")}})
				return outcomeOf(err)
			},
		},
		{
			name: "a consistent read on a global secondary index",
			want: "ValidationException",
			run: func(ctx context.Context, db *dynamodb.Client, _ string) outcome {
				_, err := db.Query(ctx, &dynamodb.QueryInput{TableName: aws.String("runs"), IndexName: aws.String(tablekeys.OpenIndex),
					ConsistentRead:            aws.Bool(true),
					KeyConditionExpression:    aws.String("#pk = :p"),
					ExpressionAttributeNames:  map[string]string{"#pk": tablekeys.OpenPK},
					ExpressionAttributeValues: map[string]types.AttributeValue{":p": str("OPEN#0")}})
				return outcomeOf(err)
			},
		},
		{
			name: "a projection of an attribute the KEYS_ONLY index does not project",
			want: "ValidationException",
			run: func(ctx context.Context, db *dynamodb.Client, _ string) outcome {
				putRun(ctx, db, runItem("r1", str(tablekeys.OpenPK), str("OPEN#0"), str(tablekeys.OpenSK), str("2026-12-04"), str("status"), str("running")))
				out, err := db.Query(ctx, &dynamodb.QueryInput{TableName: aws.String("runs"), IndexName: aws.String(tablekeys.OpenIndex),
					KeyConditionExpression:    aws.String("#pk = :p"),
					ProjectionExpression:      aws.String("runId, #st"),
					ExpressionAttributeNames:  map[string]string{"#pk": tablekeys.OpenPK, "#st": "status"},
					ExpressionAttributeValues: map[string]types.AttributeValue{":p": str("OPEN#0")}})
				o := outcomeOf(err)
				if err == nil {
					for _, item := range out.Items {
						o.Read += canonicalItem(item)
					}
				}
				return o
			},
		},
		{
			name: "Select ALL_ATTRIBUTES on the KEYS_ONLY index",
			want: "ValidationException",
			run: func(ctx context.Context, db *dynamodb.Client, _ string) outcome {
				putRun(ctx, db, runItem("r1", str(tablekeys.OpenPK), str("OPEN#0"), str(tablekeys.OpenSK), str("2026-12-04"), str("status"), str("running")))
				_, err := db.Query(ctx, &dynamodb.QueryInput{TableName: aws.String("runs"), IndexName: aws.String(tablekeys.OpenIndex),
					Select:                    types.SelectAllAttributes,
					KeyConditionExpression:    aws.String("#pk = :p"),
					ExpressionAttributeNames:  map[string]string{"#pk": tablekeys.OpenPK},
					ExpressionAttributeValues: map[string]types.AttributeValue{":p": str("OPEN#0")}})
				return outcomeOf(err)
			},
		},
		{
			name: "overlapping update paths",
			want: "ValidationException",
			run: func(ctx context.Context, db *dynamodb.Client, _ string) outcome {
				putRun(ctx, db, runItem("r1", str("m"), &types.AttributeValueMemberM{Value: map[string]types.AttributeValue{"a": num("1")}}))
				_, err := db.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: aws.String("runs"), Key: runItem("r1"),
					UpdateExpression:          aws.String("SET m = :m, m.a = :a"),
					ExpressionAttributeValues: map[string]types.AttributeValue{":m": &types.AttributeValueMemberM{Value: map[string]types.AttributeValue{}}, ":a": num("2")}})
				o := outcomeOf(err)
				o.Read = readRun(ctx, db, "r1")
				return o
			},
		},
		{
			name: "a reserved word in an update whose condition fails",
			want: "ValidationException",
			run: func(ctx context.Context, db *dynamodb.Client, _ string) outcome {
				putRun(ctx, db, runItem("r1", str("n"), num("1")))
				_, err := db.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: aws.String("runs"), Key: runItem("r1"),
					UpdateExpression:          aws.String("SET status = :s"),
					ConditionExpression:       aws.String("n > :n"),
					ExpressionAttributeValues: map[string]types.AttributeValue{":s": str("done"), ":n": num("5")}})
				o := outcomeOf(err)
				o.Read = readRun(ctx, db, "r1")
				return o
			},
		},
		{
			name: "an empty list, map and binary kept as they are",
			want: "",
			run: func(ctx context.Context, db *dynamodb.Client, _ string) outcome {
				_, err := db.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String("runs"), Item: runItem("r1",
					str("l"), &types.AttributeValueMemberL{Value: []types.AttributeValue{}},
					str("m"), &types.AttributeValueMemberM{Value: map[string]types.AttributeValue{}},
					str("b"), &types.AttributeValueMemberB{Value: []byte{}})})
				o := outcomeOf(err)
				o.Read = readRun(ctx, db, "r1")
				return o
			},
		},
		{
			name: "an update growing an item past 400 KB",
			want: "ValidationException",
			run: func(ctx context.Context, db *dynamodb.Client, _ string) outcome {
				putRun(ctx, db, runItem("r1", str("a"), str(strings.Repeat("x", 300*1024))))
				_, err := db.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: aws.String("runs"), Key: runItem("r1"),
					UpdateExpression:          aws.String("SET b = :b"),
					ExpressionAttributeValues: map[string]types.AttributeValue{":b": str(strings.Repeat("y", 200*1024))}})
				o := outcomeOf(err)
				o.Read = strconv.Itoa(len(readRun(ctx, db, "r1")))
				return o
			},
		},
		{
			name: "a key condition without the partition key",
			want: "ValidationException",
			run: func(ctx context.Context, db *dynamodb.Client, _ string) outcome {
				_, err := db.Query(ctx, &dynamodb.QueryInput{TableName: aws.String("runs"), IndexName: aws.String(tablekeys.OpenIndex),
					KeyConditionExpression:    aws.String("#sk > :s"),
					ExpressionAttributeNames:  map[string]string{"#sk": tablekeys.OpenSK},
					ExpressionAttributeValues: map[string]types.AttributeValue{":s": str("2026")}})
				return outcomeOf(err)
			},
		},
		{
			name: "the old item on a failed condition",
			want: "ConditionalCheckFailedException",
			run: func(ctx context.Context, db *dynamodb.Client, _ string) outcome {
				putRun(ctx, db, runItem("r1", str("n"), num("1"), str("l"), &types.AttributeValueMemberL{Value: []types.AttributeValue{}}))
				_, err := db.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: aws.String("runs"), Key: runItem("r1"),
					UpdateExpression:                    aws.String("SET n = :n"),
					ConditionExpression:                 aws.String("n > :n"),
					ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
					ExpressionAttributeValues:           map[string]types.AttributeValue{":n": num("5")}})
				return outcomeOf(err)
			},
		},
		{
			name: "the old item of a cancelled transaction item",
			want: "TransactionCanceledException",
			run: func(ctx context.Context, db *dynamodb.Client, _ string) outcome {
				putRun(ctx, db, runItem("r1", str("n"), num("1")))
				_, err := db.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{
					{Put: &types.Put{TableName: aws.String("runs"), Item: runItem("r2")}},
					{Update: &types.Update{TableName: aws.String("runs"), Key: runItem("r1"),
						UpdateExpression: aws.String("SET n = :n"), ConditionExpression: aws.String("n > :n"),
						ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
						ExpressionAttributeValues:           map[string]types.AttributeValue{":n": num("5")}}},
				}})
				o := outcomeOf(err)
				o.Read = readRun(ctx, db, "r2")
				return o
			},
		},
		{
			name: "a table name under three characters",
			want: "ValidationException",
			run: func(ctx context.Context, db *dynamodb.Client, _ string) outcome {
				_, err := db.CreateTable(ctx, &dynamodb.CreateTableInput{TableName: aws.String("ab"), BillingMode: types.BillingModePayPerRequest,
					AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String("id"), AttributeType: types.ScalarAttributeTypeS}},
					KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String("id"), KeyType: types.KeyTypeHash}}})
				return outcomeOf(err)
			},
		},
		{
			name: "an index name under three characters",
			want: "ValidationException",
			run: func(ctx context.Context, db *dynamodb.Client, _ string) outcome {
				_, err := db.CreateTable(ctx, &dynamodb.CreateTableInput{TableName: aws.String("abc"), BillingMode: types.BillingModePayPerRequest,
					AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String("id"), AttributeType: types.ScalarAttributeTypeS},
						{AttributeName: aws.String("g"), AttributeType: types.ScalarAttributeTypeS}},
					KeySchema: []types.KeySchemaElement{{AttributeName: aws.String("id"), KeyType: types.KeyTypeHash}},
					GlobalSecondaryIndexes: []types.GlobalSecondaryIndex{{IndexName: aws.String("gi"),
						KeySchema:  []types.KeySchemaElement{{AttributeName: aws.String("g"), KeyType: types.KeyTypeHash}},
						Projection: &types.Projection{ProjectionType: types.ProjectionTypeKeysOnly}}}})
				return outcomeOf(err)
			},
		},
		{
			name:    "a request without a signature",
			want:    "MissingAuthenticationTokenException",
			departs: "DynamoDB Local names the error MissingAuthenticationToken; the developer guide's error table names it MissingAuthenticationTokenException (HTTP 400 both)",
			run: func(ctx context.Context, _ *dynamodb.Client, url string) outcome {
				req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(`{"TableName":"runs","Key":{"runId":{"S":"r1"}}}`))
				req.Header.Set("Content-Type", "application/x-amz-json-1.0")
				req.Header.Set("X-Amz-Target", "DynamoDB_20120810.GetItem")
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					return outcome{Code: "transport", message: err.Error()}
				}
				defer resp.Body.Close()
				b, _ := io.ReadAll(resp.Body)
				var e struct {
					Type string `json:"__type"`
				}
				_ = json.Unmarshal(b, &e)
				_, code, _ := strings.Cut(e.Type, "#")
				if resp.StatusCode == http.StatusOK {
					code = ""
				}
				return outcome{Status: resp.StatusCode, Code: code, message: string(b)}
			},
		},
		{
			name: "a transaction repeated with its ClientRequestToken",
			want: "",
			run: func(ctx context.Context, db *dynamodb.Client, _ string) outcome {
				in := addOne("r1", "conformance-token")
				var err error
				for range 2 {
					if _, err = db.TransactWriteItems(ctx, in); err != nil {
						break
					}
				}
				o := outcomeOf(err)
				o.Read = readRun(ctx, db, "r1")
				return o
			},
		},
		{
			name: "a changed transaction with the same ClientRequestToken",
			want: "IdempotentParameterMismatchException",
			run: func(ctx context.Context, db *dynamodb.Client, _ string) outcome {
				_, err := db.TransactWriteItems(ctx, addOne("r1", "conformance-token"))
				if err == nil {
					_, err = db.TransactWriteItems(ctx, addOne("r2", "conformance-token"))
				}
				o := outcomeOf(err)
				o.Read = readRun(ctx, db, "r1") + readRun(ctx, db, "r2")
				return o
			},
		},
		{
			name: "a cancelled transaction repeated with its ClientRequestToken",
			want: "TransactionCanceledException",
			run: func(ctx context.Context, db *dynamodb.Client, _ string) outcome {
				putRun(ctx, db, runItem("r1", str("n"), num("5")))
				var err error
				for range 2 {
					_, err = db.TransactWriteItems(ctx, addOne("r1", "conformance-token"))
				}
				o := outcomeOf(err)
				o.Read = readRun(ctx, db, "r1")
				return o
			},
		},
	}
}
