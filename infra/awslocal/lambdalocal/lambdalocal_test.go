package lambdalocal_test

import (
	"context"
	"errors"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	"github.com/aws/aws-sdk-go-v2/service/lambda/types"

	"github.com/commonly/runtime/infra/awslocal/lambdalocal"
)

// The real SDK client's asynchronous Invoke is queued for the caller to
// run; another function and a synchronous invocation are refused.
func TestInvokeThroughTheSDK(t *testing.T) {
	s, err := lambdalocal.Start("fn", "arn:aws:lambda:us-east-1:123456789012:function:fn")
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	c := s.Client()
	ctx := context.Background()

	out, err := c.Invoke(ctx, &lambda.InvokeInput{FunctionName: aws.String("fn"), InvocationType: types.InvocationTypeEvent, Payload: []byte(`{"a":1}`)})
	if err != nil || out.StatusCode != 202 {
		t.Fatalf("Event invocation: %+v %v", out, err)
	}
	if q := s.Take(); len(q) != 1 || q[0].Function != "fn" || string(q[0].Payload) != `{"a":1}` {
		t.Fatalf("queue %+v", q)
	}
	if q := s.Take(); len(q) != 0 {
		t.Fatalf("Take did not empty the queue: %+v", q)
	}

	_, err = c.Invoke(ctx, &lambda.InvokeInput{FunctionName: aws.String("other"), InvocationType: types.InvocationTypeEvent, Payload: []byte(`{}`)})
	var notFound *types.ResourceNotFoundException
	if !errors.As(err, &notFound) {
		t.Errorf("another function: %v", err)
	}
	_, err = c.Invoke(ctx, &lambda.InvokeInput{FunctionName: aws.String("fn"), Payload: []byte(`{}`)})
	var invalid *types.InvalidRequestContentException
	if !errors.As(err, &invalid) {
		t.Errorf("a synchronous invocation: %v", err)
	}
	if q := s.Take(); len(q) != 0 {
		t.Errorf("refused invocations queued: %+v", q)
	}
}
