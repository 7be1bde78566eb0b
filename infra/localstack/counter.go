package localstack

import (
	"context"
	"maps"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/smithy-go/middleware"
)

// Counter counts the DynamoDB API calls made through a client, by
// operation name. It counts at the Initialize step, once per call the
// store makes (the SDK's own retries of one call are not counted again;
// the store's retries of a conflicted transaction are new calls, and are).
type Counter struct {
	mu      sync.Mutex
	ops     map[string]int64
	observe func(context.Context, Observed)
}

// Observed is one counted call as the middleware saw it: for a caller
// that accounts for more than the operation (the load run's tables and
// write units, bench/internal/load).
type Observed struct {
	Op      string
	Input   any // the operation's input, e.g. *dynamodb.PutItemInput
	Output  any // its output; nil when it failed
	Err     error
	Started time.Time
}

// Observe calls fn after each counted call returns, with the call's
// context, from the next call on.
func (c *Counter) Observe(fn func(context.Context, Observed)) {
	c.mu.Lock()
	c.observe = fn
	c.mu.Unlock()
}

// NewCounter returns an empty counter.
func NewCounter() *Counter { return &Counter{ops: map[string]int64{}} }

// Option installs the counting middleware on a DynamoDB client:
// dynamodb.NewFromConfig(cfg, counter.Option()). It reads only the
// operation's name (and, with Observe, times the call): it runs inside
// the turn process whose CPU the benchmarks measure, so it decodes
// nothing (awscalls.Middleware, which records every key, is for the
// tests' recordings).
func (c *Counter) Option() func(*dynamodb.Options) {
	return func(o *dynamodb.Options) {
		o.APIOptions = append(o.APIOptions, func(s *middleware.Stack) error {
			return s.Initialize.Add(middleware.InitializeMiddlewareFunc("BenchCountCalls",
				func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
					op := awsmiddleware.GetOperationName(ctx)
					observe := c.add(op)
					if observe == nil {
						return next.HandleInitialize(ctx, in)
					}
					started := time.Now()
					out, md, err := next.HandleInitialize(ctx, in)
					observe(ctx, Observed{Op: op, Input: in.Parameters, Output: out.Result, Err: err, Started: started})
					return out, md, err
				}), middleware.After)
		})
	}
}

// add counts a call of op and returns the observer.
func (c *Counter) add(op string) func(context.Context, Observed) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.ops[op]++
	return c.observe
}

// Snapshot returns the counts so far.
func (c *Counter) Snapshot() Calls {
	c.mu.Lock()
	defer c.mu.Unlock()
	return Calls(maps.Clone(c.ops))
}

// Calls are DynamoDB calls by operation name.
type Calls map[string]int64

// Total is the number of calls.
func (c Calls) Total() int64 {
	var n int64
	for _, v := range c {
		n += v
	}
	return n
}

// Sub is c minus an earlier snapshot.
func (c Calls) Sub(earlier Calls) Calls {
	out := Calls{}
	for k, v := range c {
		if d := v - earlier[k]; d != 0 {
			out[k] = d
		}
	}
	return out
}

// PerTurn renders the calls divided by turns, e.g. "GetItem 1, PutItem 2".
func (c Calls) PerTurn(turns int) string {
	names := make([]string, 0, len(c))
	for k := range c {
		names = append(names, k)
	}
	sort.Strings(names)
	parts := make([]string, len(names))
	for i, k := range names {
		parts[i] = k + " " + trimFloat(float64(c[k])/float64(turns))
	}
	return strings.Join(parts, ", ")
}

func trimFloat(f float64) string {
	s := strings.TrimRight(strings.TrimRight(strconv.FormatFloat(f, 'f', 2, 64), "0"), ".")
	if s == "" {
		return "0"
	}
	return s
}
