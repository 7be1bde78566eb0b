package main

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/commonly/runtime/functions/turn/app"
	"github.com/commonly/runtime/infra/awslocal/lambdalocal"
	"github.com/commonly/runtime/shared/turns"
)

// localFunctionName is the turn function's name in the local stack: the
// name its dispatches invoke (AWS_LAMBDA_FUNCTION_NAME), unless set.
const localFunctionName = "commonly-turn-local"

// buildTurn wires the turn function as AWS runs it. With
// TURN_DISPATCH=lambda (the local stack's default) a turn's dispatch is
// the real SDK client's asynchronous Invoke of the function, served by
// the Lambda stand-in, which answers 202 at once and runs the dispatch
// event through the function's entry point (Handler.Invoke, the path a
// dispatch takes in Lambda) in an invocation of its own, a goroutine with
// the function's timeout and Lambda's retries: POST …/turns answers
// 202 queued, and Prefer: wait=N waits for the run as it does in AWS.
// With TURN_DISPATCH=inline the turn runs inside the request. lam is nil
// then; otherwise the caller closes it, after the function's last request.
func buildTurn(ctx context.Context, cfg app.Config, d app.Deps) (built *app.Built, lam *lambdalocal.Server, err error) {
	if cfg.Dispatch != app.DispatchLambda {
		built, err = app.Build(ctx, cfg, d)
		return built, nil, err
	}
	lam, err = lambdalocal.StartRunning(lambdalocal.RunConfig{
		Timeout: turns.MaxTurnDuration,
		Log:     d.Log,
		Run: func(ctx context.Context, payload []byte) error {
			// built is set before the first turn can be dispatched.
			_, err := built.Handler.Invoke(ctx, json.RawMessage(payload))
			return err
		},
	}, cfg.FunctionName)
	if err != nil {
		return nil, nil, err
	}
	d.Lambda = lam.Client()
	if built, err = app.Build(ctx, cfg, d); err != nil {
		_ = lam.Close()
		return nil, nil, err
	}
	return built, lam, nil
}

// dispatchLabel is the start banner's line.
func dispatchLabel(cfg app.Config, lam *lambdalocal.Server) string {
	if lam == nil {
		return cfg.Dispatch + ": a turn runs inside its request"
	}
	return fmt.Sprintf("lambda: asynchronous Invoke of %q through the local Lambda at %s; each turn in an invocation of its own, as in AWS (TURN_DISPATCH=inline runs it inside the request)", cfg.FunctionName, lam.URL)
}
