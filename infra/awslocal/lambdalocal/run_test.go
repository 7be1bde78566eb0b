package lambdalocal_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/lambdacontext"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	"github.com/aws/aws-sdk-go-v2/service/lambda/types"

	"github.com/commonly/runtime/infra/awslocal/lambdalocal"
)

func event(ctx context.Context, t *testing.T, c *lambda.Client, payload string) {
	t.Helper()
	out, err := c.Invoke(ctx, &lambda.InvokeInput{FunctionName: aws.String("fn"), InvocationType: types.InvocationTypeEvent, Payload: []byte(payload)})
	if err != nil || out.StatusCode != 202 {
		t.Fatalf("Event invocation: %+v %v", out, err)
	}
}

// Issue 23: the caller has its 202 while the invocation runs in a
// goroutine of its own, with a request id and the function's timeout in
// its context, as Lambda runs it.
func TestRunningStandInAnswersBeforeTheInvocationRuns(t *testing.T) {
	release := make(chan struct{})
	type seen struct {
		payload   string
		requestID string
		deadline  bool
	}
	done := make(chan seen, 1)
	s, err := lambdalocal.Start(lambdalocal.RunConfig{
		Timeout: time.Minute,
		Run: func(ctx context.Context, payload []byte) error {
			<-release
			lc, _ := lambdacontext.FromContext(ctx)
			_, deadline := ctx.Deadline()
			done <- seen{string(payload), lc.AwsRequestID, deadline}
			return nil
		},
	}, "fn")
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	event(context.Background(), t, s.Client(), `{"dispatch":{"runId":"r1"}}`)
	// The 202 came while the invocation is still blocked.
	close(release)
	select {
	case got := <-done:
		if got.payload != `{"dispatch":{"runId":"r1"}}` || got.requestID == "" || !got.deadline {
			t.Errorf("invocation saw %+v", got)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the invocation never ran")
	}
}

// A failed invocation is retried as Lambda retries an asynchronous one
// (twice by default), and not after it succeeds; a panic is a failure.
func TestRunningStandInRetriesAFailedInvocation(t *testing.T) {
	for _, c := range []struct {
		name     string
		failures int
		retries  *int
		want     int32
	}{
		{"succeeds at once", 0, nil, 1},
		{"fails once", 1, nil, 2},
		{"always fails: two retries", 100, nil, 3},
		{"no retries", 100, new(int), 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			var calls atomic.Int32
			finished := make(chan struct{}, 10)
			s, err := lambdalocal.Start(lambdalocal.RunConfig{
				Retries: c.retries, RetryDelay: time.Millisecond,
				Run: func(ctx context.Context, payload []byte) error {
					defer func() { finished <- struct{}{} }()
					n := calls.Add(1)
					if int(n) <= c.failures {
						if n%2 == 0 {
							panic("boom")
						}
						return errors.New("failed")
					}
					return nil
				},
			}, "fn")
			if err != nil {
				t.Fatal(err)
			}
			event(context.Background(), t, s.Client(), `{}`)
			for range c.want {
				select {
				case <-finished:
				case <-time.After(10 * time.Second):
					t.Fatalf("%d attempts, want %d", calls.Load(), c.want)
				}
			}
			_ = s.Close() // waits for the invocation to return
			if got := calls.Load(); got != c.want {
				t.Errorf("%d attempts, want %d", got, c.want)
			}
		})
	}
}

// Close cancels a running invocation and waits for it; a stopped
// stand-in runs nothing more.
func TestRunningStandInCloseCancelsAndWaits(t *testing.T) {
	started := make(chan struct{})
	var returned atomic.Bool
	s, err := lambdalocal.Start(lambdalocal.RunConfig{
		Run: func(ctx context.Context, payload []byte) error {
			close(started)
			<-ctx.Done()
			returned.Store(true)
			return ctx.Err()
		},
	}, "fn")
	if err != nil {
		t.Fatal(err)
	}
	event(context.Background(), t, s.Client(), `{}`)
	<-started
	_ = s.Close()
	if !returned.Load() {
		t.Error("Close returned before the invocation did")
	}
}
