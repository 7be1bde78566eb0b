package lambdalocal_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	"github.com/aws/aws-sdk-go-v2/service/lambda/types"

	"github.com/commonly/runtime/infra/awslocal/lambdalocal"
)

// The real SDK client's asynchronous Invoke, by name or ARN, is run;
// another function and a synchronous invocation are refused.
func TestInvokeThroughTheSDK(t *testing.T) {
	var mu sync.Mutex
	var ran []string
	s, err := lambdalocal.Start(lambdalocal.RunConfig{Run: func(_ context.Context, payload []byte) error {
		mu.Lock()
		defer mu.Unlock()
		ran = append(ran, string(payload))
		return nil
	}}, "fn", "arn:aws:lambda:us-east-1:123456789012:function:fn")
	if err != nil {
		t.Fatal(err)
	}
	taken := func() []string {
		s.Wait()
		mu.Lock()
		defer mu.Unlock()
		q := ran
		ran = nil
		return q
	}
	defer s.Close()
	c := s.Client()
	ctx := context.Background()

	out, err := c.Invoke(ctx, &lambda.InvokeInput{FunctionName: aws.String("fn"), InvocationType: types.InvocationTypeEvent, Payload: []byte(`{"a":1}`)})
	if err != nil || out.StatusCode != 202 {
		t.Fatalf("Event invocation: %+v %v", out, err)
	}
	if q := taken(); len(q) != 1 || q[0] != `{"a":1}` {
		t.Fatalf("ran %q", q)
	}
	out, err = c.Invoke(ctx, &lambda.InvokeInput{FunctionName: aws.String("arn:aws:lambda:us-east-1:123456789012:function:fn"), InvocationType: types.InvocationTypeEvent, Payload: []byte(`{"b":2}`)})
	if err != nil || out.StatusCode != 202 {
		t.Fatalf("Event invocation by ARN: %+v %v", out, err)
	}
	if q := taken(); len(q) != 1 || q[0] != `{"b":2}` {
		t.Fatalf("ran %q", q)
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
	if q := taken(); len(q) != 0 {
		t.Errorf("refused invocations ran: %q", q)
	}
}

// A taking stand-in keeps each invocation for the test to take, once
// every accepted one is kept, and runs none.
func TestTakingStandInKeepsInvocations(t *testing.T) {
	s, err := lambdalocal.StartTaking("fn")
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, p := range []string{`{"a":1}`, `{"a":2}`} {
		out, err := s.Client().Invoke(context.Background(), &lambda.InvokeInput{FunctionName: aws.String("fn"), InvocationType: types.InvocationTypeEvent, Payload: []byte(p)})
		if err != nil || out.StatusCode != 202 {
			t.Fatalf("Event invocation: %+v %v", out, err)
		}
	}
	// Each asynchronous invocation runs on its own, as in Lambda: kept in
	// no particular order.
	q := s.Take()
	got := make([]string, len(q))
	for i, inv := range q {
		got[i] = inv.Function + " " + string(inv.Payload)
	}
	slices.Sort(got)
	if !slices.Equal(got, []string{`fn {"a":1}`, `fn {"a":2}`}) {
		t.Fatalf("taken %q", got)
	}
	if q := s.Take(); len(q) != 0 {
		t.Errorf("Take did not empty the queue: %+v", q)
	}
}
