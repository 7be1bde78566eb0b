package awscalls_test

import (
	"context"
	"slices"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge"
	ebtypes "github.com/aws/aws-sdk-go-v2/service/eventbridge/types"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"

	"github.com/commonly/runtime/infra/awslocal/eventbridgelocal"
	"github.com/commonly/runtime/infra/awslocal/lambdalocal"
	"github.com/commonly/runtime/infra/awslocal/secretsmanagerlocal"
	"github.com/commonly/runtime/internal/awscalls"
	"github.com/commonly/runtime/internal/dynamodblocal"
	"github.com/commonly/runtime/shared/store"
	"github.com/commonly/runtime/shared/tablekeys"
)

func s(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }

// TestClientAndStandInRecordTheSameCalls makes each kind of call the
// runtime makes through real SDK clients with the middleware, against the
// stand-ins recording what they serve: the two records are equal, and
// name what IAM authorizes the call on.
func TestClientAndStandInRecordTheSameCalls(t *testing.T) {
	ctx := context.Background()
	var client, served awscalls.Recorder
	opt := func(o *dynamodb.Options) { o.APIOptions = append(o.APIOptions, client.APIOption) }
	tables := store.Tables{State: "state", Runs: "runs"}
	db, err := dynamodblocal.NewWithTables(ctx, dynamodblocal.Config{Calls: &served}, tables)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	served.Take() // the tables' creation
	bus, err := eventbridgelocal.Start(eventbridgelocal.Config{Calls: &served})
	if err != nil {
		t.Fatal(err)
	}
	defer bus.Close()
	const secretARN = "arn:aws:secretsmanager:us-east-1:123456789012:secret:llm-AbCdEf"
	sm, err := secretsmanagerlocal.Start(secretsmanagerlocal.Config{Secrets: map[string]string{secretARN: "v"}, Calls: &served})
	if err != nil {
		t.Fatal(err)
	}
	defer sm.Close()
	const fnARN = "arn:aws:lambda:us-east-1:123456789012:function:turn"
	fn, err := lambdalocal.Start(lambdalocal.RunConfig{Run: func(context.Context, []byte) error { return nil }}, "turn", fnARN)
	if err != nil {
		t.Fatal(err)
	}
	defer fn.Close()
	fn.RecordCalls(&served)

	ddb := db.Client(opt)
	plan, day := tablekeys.Plan("u1"), tablekeys.UsageOnDay("u1", "2026-12-04")
	item := func(k tablekeys.Key) map[string]types.AttributeValue {
		return map[string]types.AttributeValue{tablekeys.PK: s(k.PK), tablekeys.SK: s(k.SK)}
	}
	calls := []func() error{
		func() error {
			_, err := ddb.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String("state"), Item: item(plan)})
			return err
		},
		func() error {
			_, err := ddb.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String("state"), Key: item(plan)})
			return err
		},
		func() error {
			_, err := ddb.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: aws.String("state"), Key: item(day),
				UpdateExpression: aws.String("SET n = :n"), ExpressionAttributeValues: map[string]types.AttributeValue{":n": &types.AttributeValueMemberN{Value: "1"}}})
			return err
		},
		func() error {
			_, err := ddb.BatchGetItem(ctx, &dynamodb.BatchGetItemInput{RequestItems: map[string]types.KeysAndAttributes{
				"state": {Keys: []map[string]types.AttributeValue{item(plan), item(day)}},
				"runs":  {Keys: []map[string]types.AttributeValue{{tablekeys.RunID: s("r1")}}},
			}})
			return err
		},
		func() error {
			_, err := ddb.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{
				{Put: &types.Put{TableName: aws.String("runs"), Item: map[string]types.AttributeValue{tablekeys.RunID: s("r1")}}},
				{Update: &types.Update{TableName: aws.String("state"), Key: item(day), UpdateExpression: aws.String("SET m = :n"),
					ExpressionAttributeValues: map[string]types.AttributeValue{":n": &types.AttributeValueMemberN{Value: "1"}}}},
				{ConditionCheck: &types.ConditionCheck{TableName: aws.String("state"), Key: item(plan), ConditionExpression: aws.String("attribute_exists(pk)")}},
			}})
			return err
		},
		func() error {
			_, err := ddb.TransactGetItems(ctx, &dynamodb.TransactGetItemsInput{TransactItems: []types.TransactGetItem{
				{Get: &types.Get{TableName: aws.String("state"), Key: item(plan)}},
				{Get: &types.Get{TableName: aws.String("runs"), Key: map[string]types.AttributeValue{tablekeys.RunID: s("r1")}}},
			}})
			return err
		},
		func() error {
			_, err := ddb.BatchWriteItem(ctx, &dynamodb.BatchWriteItemInput{RequestItems: map[string][]types.WriteRequest{
				"state": {{PutRequest: &types.PutRequest{Item: item(tablekeys.Sandbox("s1"))}}, {DeleteRequest: &types.DeleteRequest{Key: item(day)}}},
			}})
			return err
		},
		func() error {
			_, err := ddb.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: aws.String("state"), Key: item(tablekeys.Sandbox("s1"))})
			return err
		},
		func() error {
			_, err := ddb.Query(ctx, &dynamodb.QueryInput{TableName: aws.String("state"),
				KeyConditionExpression: aws.String("#pk = :pk AND begins_with(#sk, :d)"), ExpressionAttributeNames: map[string]string{"#pk": tablekeys.PK, "#sk": tablekeys.SK},
				ExpressionAttributeValues: map[string]types.AttributeValue{":pk": s(day.PK), ":d": s("DAY#")}})
			return err
		},
		func() error {
			_, err := ddb.Query(ctx, &dynamodb.QueryInput{TableName: aws.String("state"), IndexName: aws.String(tablekeys.LiveIndex),
				KeyConditionExpression:    aws.String("gsi1pk = :p"),
				ExpressionAttributeValues: map[string]types.AttributeValue{":p": s(tablekeys.LiveValue)}})
			return err
		},
		func() error {
			c := eventbridge.NewFromConfig(aws.Config{Region: "us-east-1", Credentials: aws.AnonymousCredentials{}}, func(o *eventbridge.Options) {
				o.BaseEndpoint = aws.String(bus.URL)
				o.APIOptions = append(o.APIOptions, client.APIOption)
			})
			_, err := c.PutEvents(ctx, &eventbridge.PutEventsInput{Entries: []ebtypes.PutEventsRequestEntry{
				{EventBusName: aws.String("alarms"), Source: aws.String("s"), DetailType: aws.String("d"), Detail: aws.String("{}")},
				{EventBusName: aws.String("alarms"), Source: aws.String("s"), DetailType: aws.String("d"), Detail: aws.String("{}")},
			}})
			return err
		},
		func() error {
			c := secretsmanager.NewFromConfig(aws.Config{Region: "us-east-1", Credentials: aws.AnonymousCredentials{}}, func(o *secretsmanager.Options) {
				o.BaseEndpoint = aws.String(sm.URL)
				o.APIOptions = append(o.APIOptions, client.APIOption)
			})
			_, err := c.GetSecretValue(ctx, &secretsmanager.GetSecretValueInput{SecretId: aws.String(secretARN)})
			return err
		},
		func() error {
			c := lambda.NewFromConfig(aws.Config{Region: "us-east-1", Credentials: aws.AnonymousCredentials{}}, func(o *lambda.Options) {
				o.BaseEndpoint = aws.String(fn.URL)
				o.APIOptions = append(o.APIOptions, client.APIOption)
			})
			_, err := c.Invoke(ctx, &lambda.InvokeInput{FunctionName: aws.String(fnARN), InvocationType: "Event", Payload: []byte("{}")})
			return err
		},
	}
	for i, call := range calls {
		if err := call(); err != nil {
			t.Fatalf("call %d: %v", i, err)
		}
	}
	got, stood := client.Take(), served.Take()
	if !slices.EqualFunc(got, stood, func(a, b awscalls.Call) bool { return awscalls.Compare(a, b) == 0 }) {
		t.Fatalf("the client recorded\n%v\nthe stand-ins\n%v", got, stood)
	}
	want := []awscalls.Call{
		{Service: "dynamodb", Operation: "PutItem", Table: "state", Key: "PLAN#"},
		{Service: "dynamodb", Operation: "GetItem", Table: "state", Key: "PLAN#"},
		{Service: "dynamodb", Operation: "UpdateItem", Table: "state", Key: "USER#"},
		{Service: "dynamodb", Operation: "BatchGetItem", Items: []awscalls.Item{{Table: "runs", Kind: "Get"}, {Table: "state", Kind: "Get", Key: "PLAN#"}, {Table: "state", Kind: "Get", Key: "USER#"}}},
		{Service: "dynamodb", Operation: "TransactWriteItems", Items: []awscalls.Item{
			{Table: "runs", Kind: "Put"}, {Table: "state", Kind: "ConditionCheck", Key: "PLAN#"}, {Table: "state", Kind: "Update", Key: "USER#"}}},
		{Service: "dynamodb", Operation: "TransactGetItems", Items: []awscalls.Item{{Table: "runs", Kind: "Get"}, {Table: "state", Kind: "Get", Key: "PLAN#"}}},
		{Service: "dynamodb", Operation: "BatchWriteItem", Items: []awscalls.Item{{Table: "state", Kind: "Delete", Key: "USER#"}, {Table: "state", Kind: "Put", Key: "SANDBOX#"}}},
		{Service: "dynamodb", Operation: "DeleteItem", Table: "state", Key: "SANDBOX#"},
		{Service: "dynamodb", Operation: "Query", Table: "state", Key: "USER#"},
		{Service: "dynamodb", Operation: "Query", Table: "state", Index: "live"},
		{Service: "events", Operation: "PutEvents", Resource: "alarms"},
		{Service: "secretsmanager", Operation: "GetSecretValue", Resource: secretARN},
		{Service: "lambda", Operation: "Invoke", Resource: fnARN},
	}
	if !slices.EqualFunc(got, want, func(a, b awscalls.Call) bool { return awscalls.Compare(a, b) == 0 }) {
		t.Fatalf("recorded\n%v\nwant\n%v", got, want)
	}
	if n := awscalls.Count(got); n["PutItem"] != 1 || n["Query"] != 2 || len(n) != len(want)-1 {
		t.Fatalf("Count %v", n)
	}
	if d := awscalls.Distinct(append(got, got...)); len(d) != len(want) {
		t.Fatalf("Distinct kept %d of %d", len(d), len(want))
	}
}

func TestKeyPrefix(t *testing.T) {
	for pk, want := range map[string]string{"USER#u1": "USER#", "IDEM#c#i#h": "IDEM#", "SANDBOX#live": "SANDBOX#", "r1": "r1", "": ""} {
		if got := awscalls.KeyPrefix(pk); got != want {
			t.Errorf("KeyPrefix(%q) = %q, want %q", pk, got, want)
		}
	}
}

// A recording names tables, secrets and buses by their variables, holds
// each call once, and fails on any difference until rewritten.
func TestSymbolicAndCheckFile(t *testing.T) {
	vars := map[string]string{"STATE_TABLE": "state", "EVENT_BUS_NAME": "bus", "LLM_API_KEY_SECRET_ARN": "arn:s"}
	calls := awscalls.Symbolic([]awscalls.Call{
		{Service: "dynamodb", Operation: "UpdateItem", Table: "state", Key: "USER#"},
		{Service: "dynamodb", Operation: "UpdateItem", Table: "state", Key: "USER#"},
		{Service: "dynamodb", Operation: "Query", Table: "state", Index: "live"},
		{Service: "dynamodb", Operation: "BatchGetItem", Items: []awscalls.Item{{Table: "state", Kind: "Get"}, {Table: "other", Kind: "Get"}}},
		{Service: "events", Operation: "PutEvents", Resource: "bus,default"},
		{Service: "secretsmanager", Operation: "GetSecretValue", Resource: "arn:s"},
	}, vars)
	path := t.TempDir() + "/calls.json"
	if err := awscalls.CheckFile(path, calls, false); err == nil {
		t.Fatal("a missing recording passed")
	}
	if err := awscalls.CheckFile(path, calls, true); err != nil {
		t.Fatal(err)
	}
	if err := awscalls.CheckFile(path, calls, false); err != nil {
		t.Fatalf("the recording just written: %v", err)
	}
	if err := awscalls.CheckFile(path, calls[1:], false); err != nil {
		t.Fatalf("a repeat is one call: %v", err)
	}
	if err := awscalls.CheckFile(path, calls[2:], false); err == nil {
		t.Fatal("a call left out passed")
	}
	got, err := awscalls.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	want := []awscalls.Call{
		{Service: "dynamodb", Operation: "BatchGetItem", Items: []awscalls.Item{{Table: "$STATE_TABLE", Kind: "Get"}, {Table: "other", Kind: "Get"}}},
		{Service: "dynamodb", Operation: "Query", Table: "$STATE_TABLE", Index: "live"},
		{Service: "dynamodb", Operation: "UpdateItem", Table: "$STATE_TABLE", Key: "USER#"},
		{Service: "events", Operation: "PutEvents", Resource: "$EVENT_BUS_NAME,default"},
		{Service: "secretsmanager", Operation: "GetSecretValue", Resource: "$LLM_API_KEY_SECRET_ARN"},
	}
	if !slices.EqualFunc(got, want, func(a, b awscalls.Call) bool { return awscalls.Compare(a, b) == 0 }) {
		t.Fatalf("read back\n%v\nwant\n%v", got, want)
	}
}
