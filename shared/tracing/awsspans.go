package tracing

import (
	"context"
	"errors"
	"slices"

	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/smithy-go"
	"github.com/aws/smithy-go/middleware"
	smithyhttp "github.com/aws/smithy-go/transport/http"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
	"go.opentelemetry.io/otel/trace"
)

// addAWSSpans makes every call of an SDK client a client span, named and
// attributed as otelaws names them ("DynamoDB.PutItem"; rpc.system.name
// aws-api, rpc.method, aws.region, aws.request_id, the response status,
// DynamoDB's table names, the error). Written here rather than taken
// from otelaws: otelaws is deprecated upstream (contrib PR #9707, no owner
// left) and links the SQS, SNS and S3 clients for their attributes, 3 MiB
// of every function's resident memory (docs/benchmarks.md); its successor
// (smithyoteltracing) is not on this build's proxy. No trace header is
// put on the request: AWS services read no W3C traceparent, and the
// dispatch carries the trace in its payload (Carrier).
//
// One middleware: the response's status and request id are read from the
// call's metadata once it returns (the SDK clients keep the raw response
// there), not by a second middleware in the deserialize step; each added
// middleware is paid on every call, as the stack is built per call.
func addAWSSpans(s *middleware.Stack) error {
	return s.Initialize.Add(middleware.InitializeMiddlewareFunc("CommonlyAWSSpan", awsSpan), middleware.After)
}

func awsSpan(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
	service, op := awsmiddleware.GetServiceID(ctx), awsmiddleware.GetOperationName(ctx)
	ctx, span := Tracer().Start(ctx, service+"."+op, trace.WithSpanKind(trace.SpanKindClient))
	defer span.End()
	out, md, err := next.HandleInitialize(ctx, in)
	if !span.IsRecording() {
		return out, md, err
	}
	// Every attribute at the end, in one call: the sampler decides at the
	// trace's end (tail.go), not from the start's attributes, and each
	// SetAttributes call locks the span and grows its attributes.
	attrs := make([]attribute.KeyValue, 0, 8)
	attrs = append(attrs,
		semconv.RPCSystemNameKey.String("aws-api"),
		semconv.RPCMethod(service+"/"+op),
		attribute.String("aws.region", awsmiddleware.GetRegion(ctx)),
	)
	if tables := dynamoDBTables(in.Parameters); tables != nil {
		attrs = append(attrs, semconv.DBSystemNameAWSDynamoDB, semconv.AWSDynamoDBTableNames(tables...))
	}
	if resp, ok := awsmiddleware.GetRawResponse(md).(*smithyhttp.Response); ok {
		attrs = append(attrs, semconv.HTTPResponseStatusCode(resp.StatusCode))
	}
	if id, ok := awsmiddleware.GetRequestIDMetadata(md); ok {
		attrs = append(attrs, attribute.String("aws.request_id", id))
	}
	if err != nil {
		attrs = append(attrs, awsErrorType(err))
		span.SetStatus(codes.Error, err.Error())
	}
	span.SetAttributes(attrs...)
	return out, md, err
}

// dynamoDBTables are the tables a DynamoDB call names (nil for another
// service's call): the calls the runtime makes.
func dynamoDBTables(params any) []string {
	one := func(t *string) []string {
		if t == nil {
			return []string{}
		}
		return []string{*t}
	}
	switch v := params.(type) {
	case *dynamodb.GetItemInput:
		return one(v.TableName)
	case *dynamodb.PutItemInput:
		return one(v.TableName)
	case *dynamodb.UpdateItemInput:
		return one(v.TableName)
	case *dynamodb.DeleteItemInput:
		return one(v.TableName)
	case *dynamodb.QueryInput:
		return one(v.TableName)
	case *dynamodb.ScanInput:
		return one(v.TableName)
	case *dynamodb.BatchGetItemInput:
		names := make([]string, 0, len(v.RequestItems))
		for t := range v.RequestItems {
			names = append(names, t)
		}
		return names
	case *dynamodb.TransactWriteItemsInput:
		names := []string{}
		for _, it := range v.TransactItems {
			var t *string
			switch {
			case it.Put != nil:
				t = it.Put.TableName
			case it.Update != nil:
				t = it.Update.TableName
			case it.Delete != nil:
				t = it.Delete.TableName
			case it.ConditionCheck != nil:
				t = it.ConditionCheck.TableName
			}
			// A transaction names a table or two: a scan, not a map.
			if t != nil && !slices.Contains(names, *t) {
				names = append(names, *t)
			}
		}
		return names
	}
	return nil
}

// awsErrorType is a failed call's error.type: the service's error code
// (ConditionalCheckFailedException, ThrottlingException) when it answered
// one, else the error's Go type (a transport error).
func awsErrorType(err error) attribute.KeyValue {
	var api smithy.APIError
	if errors.As(err, &api) && api.ErrorCode() != "" {
		return semconv.ErrorTypeKey.String(api.ErrorCode())
	}
	return semconv.ErrorType(err)
}
