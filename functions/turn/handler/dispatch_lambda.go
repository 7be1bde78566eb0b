package handler

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	"github.com/aws/aws-sdk-go-v2/service/lambda/types"

	"github.com/commonly/runtime/shared/runs"
	"github.com/commonly/runtime/shared/tracing"
)

// lambdaAPI is the part of the Lambda client the dispatcher uses.
type lambdaAPI interface {
	Invoke(ctx context.Context, in *lambda.InvokeInput, opts ...func(*lambda.Options)) (*lambda.InvokeOutput, error)
}

var _ lambdaAPI = (*lambda.Client)(nil)

// LambdaDispatcher starts a turn by invoking this function asynchronously
// with a dispatch event: the API answers at once and the turn gets its
// own invocation (and its own timeout). Lambda retries failed async
// invocations; the worker's conditional claim makes a retry harmless.
type LambdaDispatcher struct {
	Client       lambdaAPI
	FunctionName string
}

// Dispatch queues the run; the run's state is not known yet.
func (d LambdaDispatcher) Dispatch(ctx context.Context, run *runs.Run) (*runs.Run, error) {
	payload, err := json.Marshal(DispatchEvent{Dispatch: &Dispatch{RunID: run.RunID, Trace: tracing.Inject(ctx)}})
	if err != nil {
		return nil, err
	}
	out, err := d.Client.Invoke(ctx, &lambda.InvokeInput{
		FunctionName:   aws.String(d.FunctionName),
		InvocationType: types.InvocationTypeEvent,
		Payload:        payload,
	})
	if err != nil {
		return nil, fmt.Errorf("invoke %s: %w", d.FunctionName, err)
	}
	if out.StatusCode != 202 {
		return nil, fmt.Errorf("invoke %s: status %d", d.FunctionName, out.StatusCode)
	}
	return nil, nil
}
