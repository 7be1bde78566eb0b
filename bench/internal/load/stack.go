package load

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/commonly/runtime/bench/internal/turnstack"
	alarmapp "github.com/commonly/runtime/functions/alarm/app"
	reaperapp "github.com/commonly/runtime/functions/reaper/app"
	"github.com/commonly/runtime/functions/turn/app"
	"github.com/commonly/runtime/infra/awslocal/apigatewaylocal"
	"github.com/commonly/runtime/infra/awslocal/eventbridgelocal"
	"github.com/commonly/runtime/infra/awslocal/lambdalocal"
	"github.com/commonly/runtime/internal/dynamodblocal"
	"github.com/commonly/runtime/shared/llm/llmtest"
	"github.com/commonly/runtime/shared/sandbox/e2b/e2btest"
	"github.com/commonly/runtime/shared/tools"
	"github.com/commonly/runtime/shared/turns"
)

type startKey struct{}

// The functions, as the accounting names them.
const (
	fnTurn   = "turn"
	fnAlarm  = "alarm"
	fnReaper = "reaper"
)

// Stage tags the run's sandboxes (STAGE), as a deployment's are.
const Stage = "load"

// EventBus is the alarm function's bus (EVENT_BUS_NAME).
const EventBus = "commonly-load"

// stack is the local stack's production wiring, as infra/local builds it,
// with E2B and LiteLLM stand-ins in place of the bubblewrap sandbox and
// the offline model: the three functions built by their own app packages
// on the real SDK clients.
type stack struct {
	clock  *Clock
	db     *dynamodblocal.Server
	bus    *eventbridgelocal.Server
	model  *llmtest.Server
	llm    *httptest.Server
	e2b    *e2btest.Fake
	api    *httptest.Server
	lambda *lambdalocal.Server // nil with inline dispatch
	turn   *app.Built
	reaper *reaperapp.Built
	// calls counts each function's DynamoDB calls on its own client.
	calls   map[string]*turnstack.Counter
	plain   *dynamodb.Client // uncounted: the run's own reads
	stall   *stallTool
	kills   *kills // kill.go
	streams *streamFaults
	// busFaults fails the alarm's EventBridge puts (faults.go).
	busFaults busFaults
	sweeps    *sweeps

	stopAlarm  func()
	stopReaper context.CancelFunc
	reaperDone chan struct{}
}

// startStack starts the stand-ins and wires the three functions on them.
func startStack(ctx context.Context, cfg Config, log *slog.Logger) (st *stack, err error) {
	st = &stack{clock: NewClock(cfg.Speed), calls: map[string]*turnstack.Counter{}, stall: newStallTool(), reaperDone: make(chan struct{})}
	defer func() {
		if err != nil {
			st.close()
		}
	}()
	// DynamoDB keeps a stream's records 24 hours; the embedded server
	// keeps 10,000 by default, which a run's few minutes pass while the
	// alarm function is behind: keep them all, as the stream would.
	if st.db, err = dynamodblocal.NewWithTables(ctx, dynamodblocal.Config{Log: log, StreamRecordLimit: 10_000_000}, turnstack.Tables); err != nil {
		return st, err
	}
	st.plain = st.db.Client()
	if st.bus, err = eventbridgelocal.Start(eventbridgelocal.Config{Out: io.Discard}); err != nil {
		return st, err
	}
	st.model = llmtest.NewServer(turnstack.APIKey)
	st.model.HangLimit = 2 * cfg.LLMTimeout
	st.model.Respond(respond)
	st.llm = httptest.NewServer(st.model)
	st.e2b = e2btest.Serve()
	st.e2b.SetClock(st.clock.Now)
	st.e2b.OnExecute(execute)

	client := func(function string, opts ...func(*dynamodb.Options)) *dynamodb.Client {
		st.calls[function] = turnstack.NewCounter()
		return st.db.Client(append([]func(*dynamodb.Options){st.calls[function].Option()}, opts...)...)
	}
	httpc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 2 * cfg.Concurrency, IdleConnTimeout: time.Minute}}
	// The turn function's outbound calls go through the kill switch and
	// the cut answers (kill.go).
	cutRate := cfg.CutAnswers
	if cfg.FaultRate <= 0 {
		cutRate = 0
	}
	st.kills = newKills(cutRate, cfg.Seed)
	turnHTTP := &http.Client{Transport: st.kills.transport(httpc.Transport)}
	env := map[string]string{
		"STATE_TABLE": turnstack.Tables.State, "RUNS_TABLE": turnstack.Tables.Runs, "STAGE": Stage,
		"SANDBOX": reaperapp.SandboxE2B, "E2B_API_KEY": e2btest.DefaultAPIKey, "E2B_API_URL": st.e2b.URL, "E2B_SANDBOX_URL": st.e2b.URL,
		"PLAN_TURN_LIMITS": cfg.Ceilings, "LLM_TIMEOUT": cfg.LLMTimeout.String(),
		"EVENT_BUS_NAME": EventBus, "DAILY_SPEND_ALARM_USD": cfg.AlarmUSD, "TURN_MAX_USD": cfg.TurnMaxUSD,
		"TURN_DISPATCH": cfg.Dispatch, "AWS_LAMBDA_FUNCTION_NAME": "commonly-turn-load",
	}
	if cfg.CapUSD != "" {
		env["DAILY_SPEND_CAP_USD"] = cfg.CapUSD
	}
	getenv := func(k string) string { return env[k] }

	turnCfg, err := turnstack.Config(st.llm.URL, env)
	if err != nil {
		return st, fmt.Errorf("turn config: %w", err)
	}
	deps := app.Deps{Dynamo: client(fnTurn, st.kills.dynamo), HTTP: turnHTTP, Now: st.clock.Now, Log: log, ExtraTools: []tools.Tool{st.stall}}
	if turnCfg.Dispatch == app.DispatchLambda {
		// As make run dispatches (infra/local/dispatch.go): the real SDK
		// client's asynchronous Invoke, served by the Lambda stand-in, which
		// answers 202 and runs the dispatch through the function's entry
		// point in an invocation of its own, with the function's timeout and
		// Lambda's retries.
		if st.lambda, err = lambdalocal.StartRunning(lambdalocal.RunConfig{
			Timeout: turns.MaxTurnDuration, Log: log,
			Run: st.kills.invoke(func(ctx context.Context, payload []byte) error {
				_, err := st.turn.Handler.Invoke(ctx, json.RawMessage(payload))
				return err
			}),
		}, turnCfg.FunctionName); err != nil {
			return st, err
		}
		deps.Lambda = st.lambda.Client()
	}
	if st.turn, err = turnstack.Build(ctx, turnCfg, deps); err != nil {
		return st, fmt.Errorf("turn function: %w", err)
	}
	// The admission latency starts where API Gateway hands the request to
	// the function (startKey, read by the observer).
	invoke := func(ctx context.Context, ev events.APIGatewayV2HTTPRequest) events.APIGatewayV2HTTPResponse {
		return st.turn.Handler.HandleHTTP(context.WithValue(ctx, startKey{}, time.Now()), ev)
	}
	st.api = httptest.NewServer(&apigatewaylocal.Gateway{Secret: []byte(turnstack.Secret), Invoke: invoke})

	alarmCfg, err := alarmapp.LoadConfig(getenv)
	if err != nil {
		return st, fmt.Errorf("alarm config: %w", err)
	}
	alarm, err := alarmapp.Build(alarmCfg, alarmapp.Deps{Dynamo: client(fnAlarm), EventBridge: st.bus.Client(), Now: st.clock.Now, Log: log})
	if err != nil {
		return st, fmt.Errorf("alarm function: %w", err)
	}
	st.streams = &streamFaults{rate: cfg.FaultRate, handle: alarm.Handle}
	if st.stopAlarm, err = st.db.Subscribe(ctx, turnstack.Tables.Runs, st.streams.invoke,
		dynamodblocal.MappingConfig{ReportBatchItemFailures: true, FunctionName: "AlarmFunction", RetryDelay: 250 * time.Millisecond}); err != nil {
		return st, fmt.Errorf("alarm mapping: %w", err)
	}

	reaperDeps := reaperapp.Deps{Dynamo: client(fnReaper), HTTP: httpc, Now: st.clock.Now, Log: log}
	if st.lambda != nil {
		// As in AWS, the reaper re-dispatches a run whose worker stopped
		// with attempts left; without it, it closes the run interrupted.
		env["TURN_FUNCTION_NAME"], reaperDeps.Lambda = turnCfg.FunctionName, st.lambda.Client()
	}
	reaperCfg, err := reaperapp.LoadConfig(getenv)
	if err != nil {
		return st, fmt.Errorf("reaper config: %w", err)
	}
	if st.reaper, err = reaperapp.Build(reaperCfg, reaperDeps); err != nil {
		return st, fmt.Errorf("reaper function: %w", err)
	}
	st.sweeps = &sweeps{lifetime: reaperCfg.Lifetime, interval: st.clock.Of(cfg.ReaperInterval)}
	var rctx context.Context
	rctx, st.stopReaper = context.WithCancel(ctx)
	go st.sweepEvery(rctx, cfg.ReaperInterval)
	return st, nil
}

// sweepEvery invokes the reaper's handler on a ticker, as the schedule
// does, and checks the sandboxes after each sweep.
func (st *stack) sweepEvery(ctx context.Context, interval time.Duration) {
	defer close(st.reaperDone)
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		started := st.clock.Now()
		res, err := st.reaper.Handler.Handle(ctx, events.EventBridgeEvent{
			ID: fmt.Sprintf("load-sweep-%d", time.Now().UnixNano()), DetailType: "Scheduled Event", Source: "aws.events", Time: st.clock.Now(),
		})
		st.sweeps.record(res, err)
		st.sweeps.check(ctx, st, started)
	}
}

// close stops what startStack started, the functions first.
func (st *stack) close() {
	if st.stopReaper != nil {
		st.stopReaper()
		<-st.reaperDone
	}
	if st.stopAlarm != nil {
		st.stopAlarm()
	}
	if st.stall != nil {
		st.stall.release()
	}
	if st.kills != nil {
		st.kills.stop()
	}
	if st.lambda != nil {
		_ = st.lambda.Close()
	}
	for _, s := range []*httptest.Server{st.api, st.llm} {
		if s != nil {
			s.CloseClientConnections()
			s.Close()
		}
	}
	if st.e2b != nil {
		st.e2b.Close()
	}
	if st.bus != nil {
		_ = st.bus.Close()
	}
	if st.db != nil {
		_ = st.db.Close()
	}
}
