package localstack

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	"github.com/aws/smithy-go/logging"

	alarmapp "github.com/commonly/runtime/functions/alarm/app"
	eventshandler "github.com/commonly/runtime/functions/events/handler"
	reaperapp "github.com/commonly/runtime/functions/reaper/app"
	"github.com/commonly/runtime/functions/turn/app"
	"github.com/commonly/runtime/infra/awslocal/eventbridgelocal"
	"github.com/commonly/runtime/infra/awslocal/lambdalocal"
	"github.com/commonly/runtime/infra/awslocal/secretsmanagerlocal"
	"github.com/commonly/runtime/internal/dynamodblocal"
	"github.com/commonly/runtime/internal/loopback"
	"github.com/commonly/runtime/shared/sandbox/local"
	"github.com/commonly/runtime/shared/store"
	"github.com/commonly/runtime/shared/tracing"
)

// Account is the account in the stack's ARNs (the Lambda stand-in's
// function, the template's references in make invoke).
const Account = "123456789012"

// Stack is a running local stack.
type Stack struct {
	// Env is the deployment's environment: Config.Env over Defaults, the
	// model's URL set when the stack serves one.
	Env    map[string]string
	Tables store.Tables
	// DB is the embedded DynamoDB (nil with Config.DynamoDBURL);
	// DynamoDBURL its endpoint either way.
	DB          *dynamodblocal.Server
	DynamoDBURL string
	Bus         *eventbridgelocal.Server
	// Lambda serves the Invoke API of the turn function's asynchronous
	// invocations of itself (its dispatches), each run in an invocation
	// of its own and retried as Lambda retries one.
	Lambda  *lambdalocal.Server
	Secrets *secretsmanagerlocal.Server // nil without Config.Secrets
	// Pods is Config.Pods when the stack serves it; nil otherwise.
	Pods *Pods
	// ModelURL is where Config.Model is served ("" without one).
	ModelURL string
	// APIURL is the API's base URL, with the turn function in process.
	APIURL string

	// The functions wired in this process (nil when not in
	// Config.Functions), and their configurations.
	Turn         *app.Built
	TurnConfig   app.Config
	Alarm        StreamHandler
	AlarmConfig  alarmapp.Config
	Reaper       *reaperapp.Built
	ReaperConfig reaperapp.Config
	Events       *eventshandler.Handler
	// Sandbox is the local sandbox provider (SANDBOX=local), one for the
	// turns and the reaper: its sessions live in this process.
	Sandbox *local.Provider
	// Calls counts each in-process function's DynamoDB calls (Config.Count).
	Calls map[Function]*Counter

	cfg    Config
	aws    aws.Config
	api    *loopback.Server
	model  *loopback.Server
	pods   *loopback.Server
	worker invoker // Config.Worker's environment, or the turn's bootstrap (make invoke)
	owned  *worker // Config.Worker's, closed at Close

	mu          sync.Mutex
	invocations []Invocation
	bootstraps  []*Bootstrap

	stopAlarm  func()
	stopReaper context.CancelFunc
	reaperDone chan struct{}
}

// Start starts the stand-ins and wires the functions Config names on
// them. Close stops it all.
func Start(ctx context.Context, cfg Config) (st *Stack, err error) {
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	st = &Stack{cfg: cfg, Env: maps.Clone(Defaults), Calls: map[Function]*Counter{}}
	maps.Copy(st.Env, cfg.Env)
	st.Tables = store.Tables{State: st.Env["STATE_TABLE"], Runs: st.Env["RUNS_TABLE"]}
	defer func() {
		if err != nil {
			st.Close()
			st = nil
		}
	}()
	if err := st.startStandIns(ctx); err != nil {
		return st, err
	}
	// The SDK's own warnings (a response cut by a caller that left) go to
	// the stack's log, not to stderr.
	sdkLog := logging.LoggerFunc(func(c logging.Classification, format string, v ...any) {
		cfg.Log.Warn("aws sdk: "+fmt.Sprintf(format, v...), "classification", string(c))
	})
	if st.aws, err = config.LoadDefaultConfig(ctx, config.WithRegion(dynamodblocal.Region), config.WithLogger(sdkLog),
		config.WithCredentialsProvider(credentials.NewStaticCredentialsProvider(dynamodblocal.AccessKeyID, dynamodblocal.SecretAccessKey, ""))); err != nil {
		return st, fmt.Errorf("aws config: %w", err)
	}
	if cfg.Tracing.Enabled() {
		tracing.InstrumentAWS(&st.aws)
	}
	if cfg.Worker != "" {
		if st.owned, err = st.startWorker(cfg.Worker); err != nil {
			return st, fmt.Errorf("worker: %w", err)
		}
		st.worker = st.owned
	}
	return st, st.wire(ctx)
}

// startStandIns starts the model, DynamoDB, EventBridge, Secrets Manager
// and Lambda stand-ins.
func (st *Stack) startStandIns(ctx context.Context) error {
	cfg := st.cfg
	var err error
	if cfg.Model != nil {
		if st.model, err = loopback.Serve("127.0.0.1:0", cfg.Model); err != nil {
			return fmt.Errorf("model: %w", err)
		}
		st.ModelURL = st.model.URL
		st.Env["LLM_BASE_URL"] = st.ModelURL
	}
	if cfg.Pods != nil && st.Env["COMMONLY_API_URL"] == "" && st.Env["BROKER_URL"] == "" {
		if st.pods, err = loopback.Serve("127.0.0.1:0", cfg.Pods.Handler()); err != nil {
			return fmt.Errorf("local pod backend: %w", err)
		}
		st.Pods = cfg.Pods
		st.Env["COMMONLY_API_URL"], st.Env["BROKER_URL"], st.Env["BROKER_TOKEN"] = st.pods.URL, st.pods.URL, cfg.Pods.ServiceToken
	}
	if st.DynamoDBURL = cfg.DynamoDBURL; st.DynamoDBURL == "" {
		dcfg := cfg.DynamoDB
		if dcfg.Log == nil {
			dcfg.Log = cfg.Log
		}
		if dcfg.Calls == nil {
			dcfg.Calls = cfg.Calls
		}
		if st.DB, err = dynamodblocal.NewWithTables(ctx, dcfg, st.Tables); err != nil {
			return err
		}
		st.DynamoDBURL = st.DB.URL
	}
	if st.runs(Alarm) {
		bcfg := cfg.EventBridge
		if bcfg.Calls == nil {
			bcfg.Calls = cfg.Calls
		}
		if bcfg.Region == "" {
			bcfg.Region = dynamodblocal.Region
		}
		if st.Bus, err = eventbridgelocal.Start(bcfg); err != nil {
			return err
		}
	}
	if cfg.Secrets != nil {
		if st.Secrets, err = secretsmanagerlocal.Start(secretsmanagerlocal.Config{Secrets: cfg.Secrets, Calls: cfg.Calls}); err != nil {
			return err
		}
	}
	return st.startLambda()
}

// runs says whether fn may run on the stack: in this process, or as a
// bootstrap (an emulator or a worker is given). A stand-in only a
// function that does not run would call is not started (the benchmark's
// turn process links and starts only what its measure needs).
func (st *Stack) runs(fn Function) bool {
	return slices.Contains(st.cfg.Functions, fn) || st.cfg.Emulator != "" || st.cfg.Worker != ""
}

// startLambda starts the Lambda stand-in, for a turn dispatched through
// it (TURN_DISPATCH=lambda, a worker, a bootstrap).
func (st *Stack) startLambda() error {
	cfg := st.cfg
	if !st.runs(Turn) || (st.Env["TURN_DISPATCH"] != app.DispatchLambda && cfg.Worker == "" && cfg.Emulator == "") {
		return nil
	}
	var err error
	name := st.Env["AWS_LAMBDA_FUNCTION_NAME"]
	run := st.invokeAsync
	if cfg.Faults.Invoke != nil {
		run = cfg.Faults.Invoke(run)
	}
	if st.Lambda, err = lambdalocal.Start(lambdalocal.RunConfig{
		Run: run, Retries: cfg.Retries, RetryDelay: cfg.RetryDelay, Log: cfg.Log,
	}, name, "arn:aws:lambda:"+dynamodblocal.Region+":"+Account+":function:"+name); err != nil {
		return err
	}
	if cfg.Calls != nil {
		st.Lambda.RecordCalls(cfg.Calls)
	}
	return nil
}

// Endpoints are the variables with which the SDK's default
// configuration chain reaches the stand-ins: each service's endpoint,
// the region and the dummy credentials.
func (st *Stack) Endpoints() map[string]string {
	env := dynamodblocal.AWSEnv(st.DynamoDBURL)
	if st.Bus != nil {
		env[eventbridgelocal.EndpointVar] = st.Bus.URL
	}
	if st.Lambda != nil {
		env[lambdalocal.EndpointVar] = st.Lambda.URL
	}
	if st.Secrets != nil {
		env[secretsmanagerlocal.EndpointVar] = st.Secrets.URL
	}
	return env
}

// Dynamo is a real SDK client of the stack's DynamoDB, as a function's
// main builds it (the default configuration chain), outside every
// counter: for the caller's own reads.
func (st *Stack) Dynamo(opts ...func(*dynamodb.Options)) *dynamodb.Client {
	return dynamodb.NewFromConfig(st.aws, append([]func(*dynamodb.Options){func(o *dynamodb.Options) {
		o.BaseEndpoint = aws.String(st.DynamoDBURL)
	}}, opts...)...)
}

// dynamo is fn's DynamoDB client, counted with Config.Count.
func (st *Stack) dynamo(fn Function) *dynamodb.Client {
	var opts []func(*dynamodb.Options)
	if st.cfg.Count {
		c := NewCounter()
		st.Calls[fn] = c
		opts = append(opts, c.Option())
	}
	if st.cfg.Faults.DynamoDB != nil {
		opts = append(opts, st.cfg.Faults.DynamoDB(fn)...)
	}
	return st.Dynamo(opts...)
}

func (st *Stack) eventBridge() *eventbridge.Client {
	return eventbridge.NewFromConfig(st.aws, func(o *eventbridge.Options) { o.BaseEndpoint = aws.String(st.Bus.URL) })
}

func (st *Stack) lambda() *lambda.Client {
	return lambda.NewFromConfig(st.aws, func(o *lambda.Options) { o.BaseEndpoint = aws.String(st.Lambda.URL) })
}

// ReaperEvery is the reaper's period (Config.ReaperEvery).
func (st *Stack) ReaperEvery() time.Duration { return st.cfg.ReaperEvery }

// getenv reads the stack's environment.
func (st *Stack) getenv(k string) string { return st.Env[k] }

// Close stops what Start started, the functions first.
func (st *Stack) Close() {
	if st.stopReaper != nil {
		st.stopReaper()
		<-st.reaperDone
	}
	if st.stopAlarm != nil {
		st.stopAlarm()
	}
	if st.Lambda != nil {
		_ = st.Lambda.Close()
	}
	for _, s := range []*loopback.Server{st.api, st.model, st.pods} {
		if s != nil {
			_ = s.Close()
		}
	}
	st.mu.Lock()
	bs := st.bootstraps
	st.mu.Unlock()
	for _, b := range slices.Backward(bs) {
		b.close()
	}
	if st.owned != nil {
		st.owned.close()
	}
	if st.DB != nil {
		_ = st.DB.Close()
	}
	if st.Bus != nil {
		_ = st.Bus.Close()
	}
	if st.Secrets != nil {
		_ = st.Secrets.Close()
	}
}
