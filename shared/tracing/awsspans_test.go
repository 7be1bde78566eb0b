package tracing_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/commonly/runtime/shared/tracing"
)

// A DynamoDB call is one client span: its operation and table from the
// request, its status and request id from the answer, on success and on
// an error answer alike (DynamoDB's JSON protocol, served here).
func TestAWSCallSpan(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/x-amz-json-1.0")
		w.Header().Set("x-amzn-RequestId", "REQ"+r.Header.Get("X-Amz-Target")[len("DynamoDB_20120810."):])
		if r.Header.Get("X-Amz-Target") == "DynamoDB_20120810.GetItem" {
			_, _ = w.Write([]byte(`{}`))
			return
		}
		w.WriteHeader(http.StatusBadRequest)
		_, _ = w.Write([]byte(`{"__type":"com.amazonaws.dynamodb.v20120810#ResourceNotFoundException","message":"Requested resource not found"}`))
	}))
	t.Cleanup(srv.Close)
	tp, exp := setup(t, tracing.Config{SampleRatio: 1})
	opts := dynamodb.Options{
		Region: "eu-west-1", BaseEndpoint: aws.String(srv.URL),
		Credentials:      credentials.NewStaticCredentialsProvider("AKID", "SECRET", ""),
		RetryMaxAttempts: 1,
	}
	tracing.InstrumentAWSOptions(&opts.APIOptions)
	db := dynamodb.New(opts)
	key := map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: "k"}}
	ctx, root := tracing.Start(context.Background(), "root")
	if _, err := db.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String("state"), Key: key}); err != nil {
		t.Fatal(err)
	}
	if _, err := db.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: aws.String("gone"), Key: key}); err == nil {
		t.Fatal("the error answer was not an error")
	}
	root.End()
	spans := flushed(t, tp, exp)
	byName := map[string]map[attribute.Key]attribute.Value{}
	for _, s := range spans {
		attrs := map[attribute.Key]attribute.Value{}
		for _, kv := range s.Attributes {
			attrs[kv.Key] = kv.Value
		}
		byName[s.Name] = attrs
		if s.Name == "root" {
			continue
		}
		if s.SpanKind != trace.SpanKindClient || s.Parent.SpanID() != spans[len(spans)-1].SpanContext.SpanID() {
			t.Errorf("%s: kind %v, parent %v", s.Name, s.SpanKind, s.Parent.SpanID())
		}
		if want := map[string]codes.Code{"DynamoDB.GetItem": codes.Unset, "DynamoDB.DeleteItem": codes.Error}[s.Name]; s.Status.Code != want {
			t.Errorf("%s: status %v, want %v", s.Name, s.Status.Code, want)
		}
	}
	for name, want := range map[string]map[attribute.Key]any{
		"DynamoDB.GetItem":    {"rpc.method": "DynamoDB/GetItem", "http.response.status_code": int64(200), "aws.request_id": "REQGetItem", "aws.region": "eu-west-1"},
		"DynamoDB.DeleteItem": {"rpc.method": "DynamoDB/DeleteItem", "http.response.status_code": int64(400), "aws.request_id": "REQDeleteItem", "error.type": "ResourceNotFoundException"},
	} {
		got, ok := byName[name]
		if !ok {
			t.Fatalf("no span %s: %v", name, byName)
		}
		for k, v := range want {
			if got[k].AsInterface() != v {
				t.Errorf("%s: %s = %v, want %v", name, k, got[k].AsInterface(), v)
			}
		}
	}
	if tables := byName["DynamoDB.DeleteItem"]["aws.dynamodb.table_names"].AsStringSlice(); len(tables) != 1 || tables[0] != "gone" {
		t.Errorf("tables %v", tables)
	}
}
