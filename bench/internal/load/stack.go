package load

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/commonly/runtime/bench/internal/turnstack"
	reaperapp "github.com/commonly/runtime/functions/reaper/app"
	"github.com/commonly/runtime/functions/turn/app"
	"github.com/commonly/runtime/infra/awslocal/eventbridgelocal"
	"github.com/commonly/runtime/infra/localstack"
	"github.com/commonly/runtime/internal/dynamodblocal"
	"github.com/commonly/runtime/shared/llm/llmtest"
	"github.com/commonly/runtime/shared/sandbox/e2b/e2btest"
)

type startKey struct{}

// The functions, as the accounting names them.
const (
	fnTurn   = string(localstack.Turn)
	fnAlarm  = string(localstack.Alarm)
	fnReaper = string(localstack.Reaper)
)

// Stage tags the run's sandboxes (STAGE), as a deployment's are.
const Stage = "load"

// EventBus is the alarm function's bus (EVENT_BUS_NAME).
const EventBus = "commonly-load"

// stack is the local stack (infra/localstack) as make run wires it, with
// E2B and LiteLLM stand-ins in place of the bubblewrap sandbox and the
// offline model, the benchmark's tool and poster, each function's
// DynamoDB calls counted, the stack's clock running faster and faults
// injected.
type stack struct {
	*localstack.Stack
	clock *Clock
	model *llmtest.Server
	e2b   *e2btest.Fake
	plain *dynamodb.Client // uncounted: the run's own reads
	stall *stallTool
	kills *kills // kill.go
	// calls counts each function's DynamoDB calls on its own client.
	calls   map[string]*localstack.Counter
	streams *streamFaults
	// busFaults fails the alarm's EventBridge puts (faults.go).
	busFaults busFaults
	sweeps    *sweeps
}

// startStack starts the local stack with the run's stand-ins and faults.
func startStack(ctx context.Context, cfg Config, log *slog.Logger) (st *stack, err error) {
	st = &stack{clock: NewClock(cfg.Speed), stall: newStallTool(), calls: map[string]*localstack.Counter{}}
	defer func() {
		if err != nil {
			st.close()
		}
	}()
	st.model = llmtest.NewServer(turnstack.APIKey)
	st.model.HangLimit = 2 * cfg.LLMTimeout
	st.model.Respond(respond)
	st.e2b = e2btest.Serve()
	st.e2b.SetClock(st.clock.Now)
	st.e2b.OnExecute(execute)
	env := turnstack.Env(map[string]string{
		"STAGE": Stage, "SANDBOX": reaperapp.SandboxE2B, "E2B_API_KEY": e2btest.DefaultAPIKey, "E2B_API_URL": st.e2b.URL, "E2B_SANDBOX_URL": st.e2b.URL,
		"PLAN_TURN_LIMITS": cfg.Ceilings, "LLM_TIMEOUT": cfg.LLMTimeout.String(),
		"EVENT_BUS_NAME": EventBus, "DAILY_SPEND_ALARM_USD": cfg.AlarmUSD, "TURN_MAX_USD": cfg.TurnMaxUSD,
		"TURN_DISPATCH": cfg.Dispatch, "AWS_LAMBDA_FUNCTION_NAME": "commonly-turn-load",
	})
	if cfg.CapUSD != "" {
		env["DAILY_SPEND_CAP_USD"] = cfg.CapUSD
	}
	reaperCfg, err := reaperapp.LoadConfig(func(k string) string { return env[k] })
	if err != nil {
		return st, fmt.Errorf("reaper config: %w", err)
	}
	st.sweeps = &sweeps{lifetime: reaperCfg.Lifetime, interval: st.clock.Of(cfg.ReaperInterval)}
	st.streams = &streamFaults{rate: cfg.FaultRate}
	cutRate := cfg.CutAnswers
	if cfg.FaultRate <= 0 {
		cutRate = 0
	}
	st.kills = newKills(cutRate, cfg.Seed)
	st.Stack, err = localstack.Start(ctx, localstack.Config{
		Env: env, Functions: []localstack.Function{localstack.Turn, localstack.Alarm, localstack.Reaper},
		// DynamoDB keeps a stream's records 24 hours; the embedded server
		// keeps 10,000 by default, which a run's few minutes pass while the
		// alarm function is behind: keep them all, as the stream would.
		DynamoDB:    dynamodblocal.Config{Log: log, StreamRecordLimit: 10_000_000},
		EventBridge: eventbridgelocal.Config{Out: io.Discard},
		Model:       st.model, TurnOptions: append(turnstack.Options(), app.WithTools(st.stall)),
		Count: true, Now: st.clock.Now, Log: log, JWTSecret: []byte(turnstack.Secret),
		// The functions' outbound calls and the turn function's DynamoDB
		// calls go through the kill switch and the cut answers (kill.go).
		HTTP: &http.Client{Transport: st.kills.transport(&http.Transport{MaxIdleConnsPerHost: 2 * cfg.Concurrency, IdleConnTimeout: time.Minute})},
		Faults: localstack.Faults{
			Invoke: st.kills.invoke, DynamoDB: st.kills.options,
			Stream: st.streams.wrap,
			// The admission latency starts where API Gateway hands the
			// request to the function (startKey, read by the observer).
			API: func(next localstack.APIHandler) localstack.APIHandler {
				return func(ctx context.Context, ev events.APIGatewayV2HTTPRequest) events.APIGatewayV2HTTPResponse {
					return next(context.WithValue(ctx, startKey{}, time.Now()), ev)
				}
			},
		},
		Mapping:     dynamodblocal.MappingConfig{RetryDelay: 250 * time.Millisecond},
		ReaperEvery: cfg.ReaperInterval,
		OnSweep: func(s localstack.Sweep) {
			st.sweeps.record(s.Result, s.Err)
			st.sweeps.check(ctx, st, s.Started)
		},
	})
	if err != nil {
		return st, err
	}
	st.plain = st.Dynamo()
	for fn, c := range st.Calls {
		st.calls[string(fn)] = c
	}
	return st, nil
}

// close stops the stack and the fakes, the functions first.
func (st *stack) close() {
	if st.stall != nil {
		st.stall.release()
	}
	if st.kills != nil {
		st.kills.stop()
	}
	if st.Stack != nil {
		st.Stack.Close()
	}
	if st.e2b != nil {
		st.e2b.Close()
	}
}
