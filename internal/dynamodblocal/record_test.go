package dynamodblocal

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/truora/minidyn/server"
)

// TestRecordJSONEveryAttributeType: the record's JSON, written by hand,
// unmarshals into events.DynamoDBEventRecord with every attribute type
// and awkward string intact.
func TestRecordJSONEveryAttributeType(t *testing.T) {
	awkward := "quote \" backslash \\ newline \n tab \t nul \x00 é 😀 \u2028"
	item := map[string]ddbtypes.AttributeValue{
		"runId":  &ddbtypes.AttributeValueMemberS{Value: "r1"},
		awkward:  &ddbtypes.AttributeValueMemberS{Value: awkward},
		"bad":    &ddbtypes.AttributeValueMemberS{Value: "a\xffb"},
		"n":      &ddbtypes.AttributeValueMemberN{Value: "-12.50"},
		"b":      &ddbtypes.AttributeValueMemberB{Value: []byte{0, 1, 254, 255}},
		"t":      &ddbtypes.AttributeValueMemberBOOL{Value: true},
		"null":   &ddbtypes.AttributeValueMemberNULL{Value: true},
		"ss":     &ddbtypes.AttributeValueMemberSS{Value: []string{"x", "y"}},
		"ns":     &ddbtypes.AttributeValueMemberNS{Value: []string{"1", "2.5"}},
		"bs":     &ddbtypes.AttributeValueMemberBS{Value: [][]byte{{1}, {2, 3}}},
		"empty":  &ddbtypes.AttributeValueMemberL{Value: []ddbtypes.AttributeValue{}},
		"nomap":  &ddbtypes.AttributeValueMemberM{Value: map[string]ddbtypes.AttributeValue{}},
		"nested": &ddbtypes.AttributeValueMemberL{Value: []ddbtypes.AttributeValue{&ddbtypes.AttributeValueMemberM{Value: map[string]ddbtypes.AttributeValue{"k": &ddbtypes.AttributeValueMemberN{Value: "1"}}}}},
	}
	want := map[string]events.DynamoDBAttributeValue{
		"runId":  events.NewStringAttribute("r1"),
		awkward:  events.NewStringAttribute(awkward),
		"bad":    events.NewStringAttribute("a\ufffdb"),
		"n":      events.NewNumberAttribute("-12.50"),
		"b":      events.NewBinaryAttribute([]byte{0, 1, 254, 255}),
		"t":      events.NewBooleanAttribute(true),
		"null":   events.NewNullAttribute(),
		"ss":     events.NewStringSetAttribute([]string{"x", "y"}),
		"ns":     events.NewNumberSetAttribute([]string{"1", "2.5"}),
		"bs":     events.NewBinarySetAttribute([][]byte{{1}, {2, 3}}),
		"empty":  events.NewListAttribute([]events.DynamoDBAttributeValue{}),
		"nomap":  events.NewMapAttribute(map[string]events.DynamoDBAttributeValue{}),
		"nested": events.NewListAttribute([]events.DynamoDBAttributeValue{events.NewMapAttribute(map[string]events.DynamoDBAttributeValue{"k": events.NewNumberAttribute("1")})}),
	}
	ch := server.ItemChange{TableName: "runs", StreamARN: "arn:x", StreamViewType: ddbtypes.StreamViewTypeNewImage,
		Keys: map[string]ddbtypes.AttributeValue{"runId": item["runId"]}, OldImage: item, NewImage: item, Expired: true}
	data := recordJSON(ch, 7, time.Unix(1_800_000_000, 999_000_000))
	if !json.Valid(data) {
		t.Fatalf("invalid JSON: %s", data)
	}
	var r events.DynamoDBEventRecord
	if err := json.Unmarshal(data, &r); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(r.Change.NewImage, want) {
		t.Errorf("NewImage\n got %#v\nwant %#v", r.Change.NewImage, want)
	}
	if r.Change.OldImage != nil || r.EventName != "MODIFY" || r.Change.SequenceNumber != "000000000000000000007" ||
		r.Change.ApproximateCreationDateTime.Unix() != 1_800_000_000 || r.UserIdentity == nil || *r.UserIdentity != TTLIdentity {
		t.Errorf("record %+v", r)
	}
	if got := ItemSize(ch.Keys); got != int64(len("runId")+len("r1")) {
		t.Errorf("key size %d", got)
	}
	for n, want := range map[string]int64{"0": 1, "100": 2, "-12.50": 3, "123456": 4, "0.000123": 3, "1.5E+10": 2} {
		if got := numberSize(n); got != want {
			t.Errorf("numberSize(%q) = %d, want %d", n, got, want)
		}
	}
}
