package load

import (
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/commonly/runtime/internal/dynamodblocal"
)

func s(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }

// The write units follow DynamoDB's rule: 1 KB units of the item, twice
// in a transaction, and a write for each index the item enters, stays on
// or leaves.
func TestWriteUnits(t *testing.T) {
	u := newUsage(map[string]tableSchema{
		"runs": {keys: []string{"runId"}, indexes: []indexSchema{{name: "open", keys: []string{"openPk", "openSince"}}}},
	})
	open := map[string]types.AttributeValue{"runId": s("r1"), "openPk": s("RUN#open"), "openSince": s("t"), "message": s(strings.Repeat("x", 1500))}
	// Admitted in a transaction: 2 KB item ×2, enters the index.
	u.call("turn", "TransactWriteItems", &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{
		{Put: &types.Put{TableName: aws.String("runs"), Item: open}},
		{ConditionCheck: &types.ConditionCheck{TableName: aws.String("runs"), Key: map[string]types.AttributeValue{"runId": s("r0")}}},
	}}, nil, true)
	if got := u.units["runs"]; got["table"] != 4+2 || got["index open"] != 1 {
		t.Fatalf("admission: %v", got)
	}
	// An update that returns the new image, still open under the same
	// index key: the keys-only index is not written.
	u.call("turn", "UpdateItem", &dynamodb.UpdateItemInput{TableName: aws.String("runs"), Key: map[string]types.AttributeValue{"runId": s("r1")},
		UpdateExpression: aws.String("SET #s = :s"), ReturnValues: types.ReturnValueAllNew},
		&dynamodb.UpdateItemOutput{Attributes: open}, true)
	if got := u.units["runs"]; got["table"] != 8 || got["index open"] != 1 {
		t.Fatalf("claim: %v", got)
	}
	// The final put, without the index keys: leaves the index (a delete).
	u.call("turn", "PutItem", &dynamodb.PutItemInput{TableName: aws.String("runs"), Item: map[string]types.AttributeValue{"runId": s("r1"), "status": s("succeeded")}}, nil, true)
	if got := u.units["runs"]; got["table"] != 9 || got["index open"] != 2 {
		t.Fatalf("final: %v", got)
	}
	// Written again off the index: no index write; a failed write
	// consumes its units but moves nothing.
	u.call("turn", "PutItem", &dynamodb.PutItemInput{TableName: aws.String("runs"), Item: map[string]types.AttributeValue{"runId": s("r1")}}, nil, true)
	u.call("turn", "PutItem", &dynamodb.PutItemInput{TableName: aws.String("runs"), Item: open}, nil, false)
	if got := u.units["runs"]; got["table"] != 12 || got["index open"] != 2 {
		t.Fatalf("off the index: %v", got)
	}
	// An update whose expression removes an index key takes it off.
	u.call("turn", "PutItem", &dynamodb.PutItemInput{TableName: aws.String("runs"), Item: map[string]types.AttributeValue{"runId": s("r2"), "openPk": s("p"), "openSince": s("t")}}, nil, true)
	u.call("turn", "UpdateItem", &dynamodb.UpdateItemInput{TableName: aws.String("runs"), Key: map[string]types.AttributeValue{"runId": s("r2")},
		UpdateExpression: aws.String("SET #a = :a REMOVE #g1, #g2"), ExpressionAttributeNames: map[string]string{"#a": "a", "#g1": "openPk", "#g2": "openSince"}}, nil, true)
	u.call("turn", "UpdateItem", &dynamodb.UpdateItemInput{TableName: aws.String("runs"), Key: map[string]types.AttributeValue{"runId": s("r2")},
		UpdateExpression: aws.String("SET #a = :a"), ExpressionAttributeNames: map[string]string{"#a": "a"}}, nil, true)
	if got := u.units["runs"]; got["index open"] != 4 {
		t.Fatalf("removed by an update: %v", got)
	}
	if got := u.calls["turn"]["runs"]; got["PutItem"] != 4 || got["UpdateItem"] != 3 || got["TransactWriteItems"] != 1 {
		t.Errorf("calls: %v", got)
	}
}

func TestItemSize(t *testing.T) {
	item := map[string]types.AttributeValue{"ab": s("xyz"), "n": &types.AttributeValueMemberN{Value: "12345"}, "l": &types.AttributeValueMemberL{Value: []types.AttributeValue{s("q")}}}
	// "ab"+"xyz" = 5; "n" + (5 digits → 3 + 1) = 5; "l" + 3 + 1 + 1 = 6.
	if got := int(dynamodblocal.ItemSize(item)); got != 16 {
		t.Errorf("ItemSize = %d, want 16", got)
	}
	if kb(0) != 1 || kb(1024) != 1 || kb(1025) != 2 {
		t.Error("kb rounds up to whole KB, at least one")
	}
}
