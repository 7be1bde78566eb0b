package awscalls

import (
	"context"
	"slices"
	"sync"

	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
	"github.com/aws/smithy-go/middleware"
)

// Recorder collects calls; safe for concurrent use. The zero value is
// ready.
type Recorder struct {
	mu    sync.Mutex
	calls []Call
}

// Record adds a call.
func (r *Recorder) Record(c Call) {
	c = c.normalize()
	r.mu.Lock()
	r.calls = append(r.calls, c)
	r.mu.Unlock()
}

// Calls returns the calls so far, in the order made.
func (r *Recorder) Calls() []Call {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.calls)
}

// Take returns the calls since the last Take (or since the start) and
// forgets them.
func (r *Recorder) Take() []Call {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := r.calls
	r.calls = nil
	return out
}

// APIOption is the recording middleware, for any SDK v2 client's
// Options.APIOptions:
//
//	dynamodb.NewFromConfig(cfg, func(o *dynamodb.Options) {
//		o.APIOptions = append(o.APIOptions, rec.APIOption)
//	})
func (r *Recorder) APIOption(s *middleware.Stack) error { return Middleware(r.Record)(s) }

// Middleware is an API option that hands each call to record, for a
// caller that keeps the calls its own way (a test's harness). It runs
// at the Initialize step, before the input is serialized and before the
// retry loop, so each call the code makes is handed over once.
func Middleware(record func(Call)) func(*middleware.Stack) error {
	return func(s *middleware.Stack) error {
		return s.Initialize.Add(middleware.InitializeMiddlewareFunc("RecordAWSCalls",
			func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
				record(FromInput(awsmiddleware.GetServiceID(ctx), awsmiddleware.GetOperationName(ctx), in.Parameters))
				return next.HandleInitialize(ctx, in)
			}), middleware.Before)
	}
}

// Counting is an API option that hands each call's operation name to
// count, decoding nothing else: for a benchmark, in whose measured
// process it runs (Middleware reads every key of every call).
func Counting(count func(operation string)) func(*middleware.Stack) error {
	return func(s *middleware.Stack) error {
		return s.Initialize.Add(middleware.InitializeMiddlewareFunc("CountAWSCalls",
			func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
				count(awsmiddleware.GetOperationName(ctx))
				return next.HandleInitialize(ctx, in)
			}), middleware.Before)
	}
}
