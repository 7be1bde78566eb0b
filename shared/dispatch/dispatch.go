// Package dispatch is how a run reaches a worker in AWS: an asynchronous
// invocation of the turn function with an event that names the run. The
// turn function sends it for each turn it admits; the reaper sends it
// again for a run whose worker stopped with attempts left, so that
// another attempt takes it over (turns.Reclaimer). Lambda retries a
// failed invocation; the run's conditional claim makes every extra
// delivery harmless.
package dispatch

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

// Event is the payload of the invocation that runs a queued or stopped
// run.
type Event struct {
	Dispatch *Dispatch `json:"dispatch"`
}

// Dispatch names the run an Event runs.
type Dispatch struct {
	RunID string `json:"runId"`
	// Trace carries the sender's trace context (W3C traceparent), so the
	// turn's invocation joins its trace.
	Trace map[string]string `json:"trace,omitempty"`
}

// LambdaAPI is the part of the Lambda client the dispatcher uses.
type LambdaAPI interface {
	Invoke(ctx context.Context, in *lambda.InvokeInput, opts ...func(*lambda.Options)) (*lambda.InvokeOutput, error)
}

var _ LambdaAPI = (*lambda.Client)(nil)

// Lambda dispatches a run by invoking FunctionName asynchronously with
// its Event: the caller answers at once and the turn gets its own
// invocation (and its own timeout). It is a turns.Dispatcher.
type Lambda struct {
	Client       LambdaAPI
	FunctionName string
}

// Dispatch queues the run; the run's state is not known yet.
func (d Lambda) Dispatch(ctx context.Context, run *runs.Run) (*runs.Run, error) {
	payload, err := json.Marshal(Event{Dispatch: &Dispatch{RunID: run.RunID, Trace: tracing.Inject(ctx)}})
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
