package app

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/lambda"

	"github.com/commonly/runtime/functions/turn/handler"
	"github.com/commonly/runtime/shared/dispatch"
	"github.com/commonly/runtime/shared/metrics"
	"github.com/commonly/runtime/shared/pricing"
	"github.com/commonly/runtime/shared/redact"
	"github.com/commonly/runtime/shared/sandbox/local"
	"github.com/commonly/runtime/shared/store"
	"github.com/commonly/runtime/shared/tracing"
	"github.com/commonly/runtime/shared/turns"
)

// Deps are the clients built once per container, outside the handler.
type Deps struct {
	Dynamo *dynamodb.Client
	// Lambda is needed for TURN_DISPATCH=lambda.
	Lambda *lambda.Client
	// HTTP is used for the model, tools, sandbox and fallback calls.
	HTTP *http.Client
	Now  func() time.Time
	Log  *slog.Logger
	// Metrics receives CloudWatch EMF events (stdout in Lambda); nil discards.
	Metrics *metrics.Emitter
	// LocalSandbox, with SANDBOX=local, is the provider code runs in; nil
	// builds one. The local stack shares its provider with its reaper,
	// which kills the sessions past their lifetime.
	LocalSandbox *local.Provider
	// Tracing is the container's tracer provider (tracing.Setup); nil or
	// off, nothing is instrumented. On, the HTTP client's calls get
	// otelhttp's client spans and every span is scrubbed of the secrets.
	// The DynamoDB and Lambda clients are instrumented where they are
	// built (tracing.InstrumentAWS), by the caller.
	Tracing *tracing.Provider
}

// Built is a wired turn function.
type Built struct {
	Handler *handler.Handler
	Service *turns.Service
	Worker  *turns.Worker
	Store   *store.Dynamo
}

// Build wires the turn function from its configuration: config → clients
// → engines → turn service and worker → handler. What runs is decided in
// Config (LLMMode, Sandbox, PodTools, WebSearch, GitHub, Fallback); this
// only builds it.
func Build(ctx context.Context, cfg Config, d Deps, opts ...Option) (*Built, error) {
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	if d.Now == nil {
		d.Now = time.Now
	}
	if d.Log == nil {
		d.Log = slog.Default()
	}
	// Every line the function writes is scrubbed of the configured
	// secrets, every piece and encoding of them: upstream text (a proxy's
	// error body, a provider's message) reaches the log only this way.
	// Each line logged with the turn's context carries its traceId.
	d.Log = slog.New(redact.NewScrubber(cfg.Secrets()...).Handler(tracing.LogHandler(d.Log.Handler())))
	if d.HTTP == nil {
		d.HTTP = &http.Client{}
	}
	if d.Tracing.Enabled() {
		d.Tracing.ScrubSecrets(cfg.Secrets()...)
		d.HTTP = tracing.HTTPClient(d.HTTP)
	}
	if d.Dynamo == nil {
		return nil, fmt.Errorf("build: a DynamoDB client is required")
	}
	st, err := store.New(store.Config{DB: d.Dynamo, Tables: cfg.Tables})
	if err != nil {
		return nil, err
	}
	prices, err := pricing.Load(cfg.PriceFile)
	if err != nil {
		return nil, err
	}
	prices = prices.WithClock(d.Now)

	engines, nativeEngine, err := buildEngines(cfg, d, o, st, prices)
	if err != nil {
		return nil, err
	}
	installs, err := turns.NewInstallCache(turns.InstallCacheConfig{Store: st, TTL: cfg.InstallCacheTTL, Now: d.Now})
	if err != nil {
		return nil, err
	}
	// Dispatched through Lambda, a turn runs in an invocation of its own,
	// and one whose invocation is ending is handed to the next at once.
	var lambdaDispatch turns.Dispatcher
	if cfg.Dispatch == DispatchLambda {
		if d.Lambda == nil {
			return nil, fmt.Errorf("build: TURN_DISPATCH=lambda needs a Lambda client")
		}
		lambdaDispatch = dispatch.Lambda{Client: d.Lambda, FunctionName: cfg.FunctionName}
	}
	worker, err := turns.NewWorker(turns.WorkerConfig{Store: st, Engines: engines, Installs: installs, Metrics: d.Metrics, Now: d.Now, Log: d.Log, Events: st, Handoff: lambdaDispatch})
	if err != nil {
		return nil, err
	}
	dispatcher := lambdaDispatch
	if dispatcher == nil {
		dispatcher = turns.InlineDispatcher{Worker: worker}
	}
	minReservation, err := prices.MinUsefulCall(cfg.defaultModel())
	if err != nil {
		return nil, fmt.Errorf("the least useful reservation: %w", err)
	}
	svc, err := turns.NewService(turns.ServiceConfig{
		Store: st, Dispatcher: dispatcher, Limits: cfg.Limits, DefaultEngine: cfg.DefaultEngine,
		Tools: nativeEngine.ToolNames(), Connectors: nativeEngine.ConnectorNames(),
		SpendCap: cfg.SpendCap, TurnBound: cfg.TurnMaxUSD, MinReservation: minReservation, MaxAttempts: cfg.MaxAttempts,
		FallbackConfigured: cfg.Fallback, Installs: installs, Metrics: d.Metrics, Now: d.Now, Log: d.Log,
	})
	if err != nil {
		return nil, err
	}
	h, err := handler.New(handler.Config{Service: svc, Worker: worker, Log: d.Log})
	if err != nil {
		return nil, err
	}
	return &Built{Handler: h, Service: svc, Worker: worker, Store: st}, nil
}
