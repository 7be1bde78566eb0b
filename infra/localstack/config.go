package localstack

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/commonly/runtime/functions/turn/app"
	"github.com/commonly/runtime/infra/awslocal/eventbridgelocal"
	"github.com/commonly/runtime/internal/awscalls"
	"github.com/commonly/runtime/internal/dynamodblocal"
	"github.com/commonly/runtime/shared/tracing"
)

// Function names a function of the stack, as the accounting and the
// logs name it.
type Function string

// The four functions.
const (
	Turn   Function = "turn"
	Alarm  Function = "alarm"
	Reaper Function = "reaper"
	Events Function = "events"
)

// All is every function, for a stack that runs them all in this process.
var All = []Function{Turn, Alarm, Reaper, Events}

// Defaults are the deployment's variables where Config.Env leaves them
// unset: the local stack's tables, stage, bus and function name, and
// turns dispatched through the Lambda stand-in, as in AWS.
var Defaults = map[string]string{
	"STATE_TABLE": "commonly-state", "RUNS_TABLE": "commonly-runs", "STAGE": "local",
	"EVENT_BUS_NAME": "commonly-local", "AWS_LAMBDA_FUNCTION_NAME": "commonly-turn-local",
	"TURN_DISPATCH": app.DispatchLambda,
}

// Config is what differs from one start of the stack to another. Zero
// values are the defaults given.
type Config struct {
	// Env is the deployment's environment: the variables the functions'
	// LoadConfig read, as the CDK stack declares them, over Defaults.
	Env map[string]string
	// Functions are the functions wired in this process by their own
	// app.Build; nil wires none (a stack of stand-ins, for bootstraps).
	// With Turn the API is served (Stack.APIURL).
	Functions []Function

	// DynamoDB configures the embedded server (its address, its streams,
	// the calls it serves). DynamoDBURL, when set, is one already serving
	// elsewhere, its tables made (the benchmark's turn process): none is
	// started.
	DynamoDB    dynamodblocal.Config
	DynamoDBURL string
	// EventBridge configures the stand-in: where its events are written,
	// the calls it serves.
	EventBridge eventbridgelocal.Config
	// Calls, when set, records every request the stand-ins serve, where
	// DynamoDB and EventBridge record none of their own (the emulator
	// tests' view of a bootstrap's AWS calls).
	Calls *awscalls.Recorder
	// Secrets, when set, are served by the Secrets Manager stand-in (ARN
	// → value) for the bootstraps' *_SECRET_ARN reads.
	Secrets map[string]string
	// Pods, when set and neither COMMONLY_API_URL nor BROKER_URL is, is
	// served as the pod backend and the credential broker the turns reach
	// (Stack.Pods).
	Pods *Pods
	// Model, when set, is served on loopback as the model the turns call:
	// LLM_BASE_URL (a scripted LiteLLM, the benchmarks' script).
	Model http.Handler

	// TurnOptions reach the turn function's app.Build (the benchmarks'
	// no-op tool and poster, the load run's stalling tool).
	TurnOptions []app.Option
	// Count gives each in-process function's DynamoDB client a call
	// counter (Stack.Calls).
	Count bool
	// Faults wraps what the stack delivers to the functions.
	Faults Faults
	// Now is the functions' clock; nil is time.Now.
	Now func() time.Time
	// Log is the functions' logger; nil discards.
	Log *slog.Logger
	// HTTP is the functions' client for the model, tools and sandboxes;
	// nil is each function's own.
	HTTP *http.Client
	// Tracing is the functions' tracer provider; nil traces nothing.
	Tracing *tracing.Provider

	// APIAddr is where the API is served; "" is any free loopback port.
	// JWTSecret signs and checks its tokens (HS256), for the API and the
	// events function alike.
	APIAddr   string
	JWTSecret []byte
	// EventsPoll is how often the events function's watch reads a run;
	// zero is its default (the benchmark of how late is live sets it).
	EventsPoll time.Duration
	// AccessLog, when set, gets one line for each request the API serves.
	AccessLog io.Writer
	// Serve, when set, builds what the API's listener serves around the
	// gateway, given the stack wired so far (make run puts its console in
	// front; the benchmark's turn process flushes its spans after each
	// response, tracing.WithFlushHTTP).
	Serve func(st *Stack, gateway http.Handler) (http.Handler, error)

	// ReaperEvery, when positive, invokes the reaper on a ticker, as its
	// schedule does; OnSweep, when set, gets each invocation's result.
	ReaperEvery time.Duration
	OnSweep     func(Sweep)
	// Mapping configures the runs stream's event source mapping to the
	// alarm function (its batch size, its retries' delay).
	Mapping dynamodblocal.MappingConfig

	// Retries of a failed asynchronous invocation (nil: Lambda's two) and
	// the delay before each (zero: a second; Lambda waits a minute or two).
	Retries    *int
	RetryDelay time.Duration
	// Emulator is the Lambda Runtime Interface Emulator's binary
	// (aws-lambda-rie), for bootstraps (Stack.Bootstrap).
	Emulator string
	// Worker, when set, is the turn function's bootstrap: each dispatched
	// turn runs in it, a worker in a process of its own that polls the
	// Runtime API stand-in (infra/awslocal/runtimeapi) as in AWS and that
	// a test may kill (Stack.KillWorker), instead of in this process. The
	// API stays in this process. WorkerLogs, when set, gets its output.
	Worker     string
	WorkerLogs io.Writer
}

// Faults wraps what the stack delivers, so that a run can inject
// failures where AWS would have them.
type Faults struct {
	// Stream wraps the alarm function's handler as the runs stream's
	// event source mapping invokes it (the load run redelivers batches,
	// as Lambda does when an answer is lost).
	Stream func(StreamHandler) StreamHandler
	// API wraps the turn function's entry point as API Gateway invokes
	// it (the load run stamps each request's start there).
	API func(APIHandler) APIHandler
	// Events wraps the events function's route (a test cuts a stream).
	Events func(http.Handler) http.Handler
	// Invoke wraps each asynchronous invocation of the turn function as
	// the Lambda stand-in runs it, and DynamoDB adds options to a
	// function's DynamoDB client (the load run kills workers mid-turn and
	// cuts answers).
	Invoke   func(Invoker) Invoker
	DynamoDB func(Function) []func(*dynamodb.Options)
}

// Invoker is one asynchronous invocation of the turn function.
type Invoker = func(ctx context.Context, payload []byte) error

// StreamHandler is the alarm function's entry point.
type StreamHandler = func(context.Context, events.DynamoDBEvent) (events.DynamoDBEventResponse, error)

// APIHandler is the turn function's HTTP entry point.
type APIHandler = func(context.Context, events.APIGatewayV2HTTPRequest) events.APIGatewayV2HTTPResponse
