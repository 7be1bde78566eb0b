package localstack

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"time"

	"github.com/aws/aws-lambda-go/events"

	alarmapp "github.com/commonly/runtime/functions/alarm/app"
	eventsapp "github.com/commonly/runtime/functions/events/app"
	eventshandler "github.com/commonly/runtime/functions/events/handler"
	reaperapp "github.com/commonly/runtime/functions/reaper/app"
	reaperhandler "github.com/commonly/runtime/functions/reaper/handler"
	"github.com/commonly/runtime/functions/turn/app"
	"github.com/commonly/runtime/infra/awslocal/apigatewaylocal"
	"github.com/commonly/runtime/internal/dynamodblocal"
	"github.com/commonly/runtime/internal/loopback"
	"github.com/commonly/runtime/shared/sandbox/local"
)

// wire builds the functions Config names, each by its own app package
// from the stack's environment, on the stand-ins' real SDK clients.
func (st *Stack) wire(ctx context.Context) error {
	fns := st.cfg.Functions
	if slices.Contains(fns, Turn) {
		if err := st.wireTurn(ctx); err != nil {
			return fmt.Errorf("turn function: %w", err)
		}
	}
	if slices.Contains(fns, Alarm) {
		if err := st.wireAlarm(ctx); err != nil {
			return fmt.Errorf("alarm function: %w", err)
		}
	}
	if slices.Contains(fns, Reaper) {
		if err := st.wireReaper(ctx); err != nil {
			return fmt.Errorf("reaper function: %w", err)
		}
	}
	if slices.Contains(fns, Events) {
		if err := st.wireEvents(); err != nil {
			return fmt.Errorf("events function: %w", err)
		}
	}
	if st.Turn != nil {
		return st.serveAPI()
	}
	return nil
}

// wireTurn builds the turn function with app.Build. With TURN_DISPATCH
// lambda a turn's dispatch is the real SDK client's asynchronous Invoke
// of the function, which the Lambda stand-in answers with 202 at once and
// runs in an invocation of its own (invokeAsync): POST …/turns answers
// 202 queued, and Prefer: wait=N waits for the run, as in AWS.
func (st *Stack) wireTurn(ctx context.Context) error {
	cfg, err := app.LoadConfig(st.getenv)
	if err != nil {
		return fmt.Errorf("config: %w", err)
	}
	st.TurnConfig = cfg
	if cfg.Sandbox == app.SandboxLocal {
		st.Sandbox = local.New(local.Config{Now: st.cfg.Now})
	}
	d := app.Deps{Dynamo: st.dynamo(Turn), HTTP: st.cfg.HTTP, Now: st.cfg.Now, Log: st.cfg.Log, LocalSandbox: st.Sandbox, Tracing: st.cfg.Tracing}
	if cfg.Dispatch == app.DispatchLambda {
		d.Lambda = st.lambda()
	}
	// Set before the API serves, so before any turn is dispatched.
	st.Turn, err = app.Build(ctx, cfg, d, st.cfg.TurnOptions...)
	return err
}

// serveAPI serves the turn function behind the API Gateway stand-in (its
// JWT authorizer), with the events function's route beside it.
func (st *Stack) serveAPI() error {
	invoke := st.Turn.Handler.HandleHTTP
	if st.cfg.Faults.API != nil {
		invoke = st.cfg.Faults.API(invoke)
	}
	gw := &apigatewaylocal.Gateway{Secret: st.cfg.JWTSecret, Invoke: invoke, Log: st.cfg.Log, Access: st.cfg.AccessLog}
	if st.Events != nil {
		gw.Events = st.Events
		if st.cfg.Faults.Events != nil {
			gw.Events = st.cfg.Faults.Events(st.Events)
		}
	}
	addr := st.cfg.APIAddr
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	var h http.Handler = gw
	if st.cfg.Serve != nil {
		var err error
		if h, err = st.cfg.Serve(st, gw); err != nil {
			return err
		}
	}
	var err error
	if st.api, err = loopback.Serve(addr, h); err != nil {
		return err
	}
	st.APIURL = st.api.URL
	return nil
}

// wireAlarm builds the alarm function and maps the runs table's stream
// to it, as the stack's event source mapping does (partial batch
// failures reported).
func (st *Stack) wireAlarm(ctx context.Context) error {
	if st.DB == nil {
		return fmt.Errorf("the runs stream needs the embedded DynamoDB in this process")
	}
	cfg, err := alarmapp.LoadConfig(st.getenv)
	if err != nil {
		return fmt.Errorf("config: %w", err)
	}
	st.AlarmConfig = cfg
	h, err := alarmapp.Build(cfg, alarmapp.Deps{Dynamo: st.dynamo(Alarm), EventBridge: st.eventBridge(), Now: st.cfg.Now, Log: st.cfg.Log})
	if err != nil {
		return err
	}
	st.Alarm = h.Handle
	handle := st.Alarm
	if st.cfg.Faults.Stream != nil {
		handle = st.cfg.Faults.Stream(handle)
	}
	m := st.cfg.Mapping
	m.ReportBatchItemFailures, m.FunctionName = true, "AlarmFunction"
	st.stopAlarm, err = st.DB.Subscribe(ctx, st.Tables.Runs, dynamodblocal.Handler(handle), m)
	return err
}

// Sweep is one invocation of the reaper: the stack's clock at its
// start, and the invocation's result.
type Sweep struct {
	Started time.Time
	Result  reaperhandler.Result
	Err     error
}

// wireReaper builds the reaper function, with the turns' local sandbox
// provider (its sessions live in this process), invoked every
// ReaperEvery as its schedule invokes it. With turns dispatched through
// the Lambda stand-in, it re-dispatches a resumable run there, as the
// stack gives it the turn function (TURN_FUNCTION_NAME, unless set).
func (st *Stack) wireReaper(ctx context.Context) error {
	getenv := st.getenv
	if st.Lambda != nil && st.Env["TURN_FUNCTION_NAME"] == "" {
		getenv = func(k string) string {
			if k == "TURN_FUNCTION_NAME" {
				return st.Env["AWS_LAMBDA_FUNCTION_NAME"]
			}
			return st.Env[k]
		}
	}
	cfg, err := reaperapp.LoadConfig(getenv)
	if err != nil {
		return fmt.Errorf("config: %w", err)
	}
	st.ReaperConfig = cfg
	d := reaperapp.Deps{Dynamo: st.dynamo(Reaper), HTTP: st.cfg.HTTP, Now: st.cfg.Now, Log: st.cfg.Log}
	if cfg.TurnFunction != "" && st.Lambda != nil {
		d.Lambda = st.lambda()
	}
	if st.Sandbox != nil {
		d.Local = st.Sandbox
	}
	if st.Reaper, err = reaperapp.Build(cfg, d); err != nil {
		return err
	}
	if st.cfg.ReaperEvery <= 0 {
		return nil
	}
	ctx, st.stopReaper = context.WithCancel(context.WithoutCancel(ctx))
	st.reaperDone = make(chan struct{})
	go func() {
		defer close(st.reaperDone)
		tick := time.NewTicker(st.cfg.ReaperEvery)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
				s := st.Sweep(ctx)
				if st.cfg.OnSweep != nil {
					st.cfg.OnSweep(s)
				}
			}
		}
	}()
	return nil
}

// Sweep invokes the reaper once, with the scheduled event its schedule
// sends.
func (st *Stack) Sweep(ctx context.Context) Sweep {
	s := Sweep{Started: st.cfg.Now()}
	s.Result, s.Err = st.Reaper.Handler.Handle(ctx, events.EventBridgeEvent{
		ID: fmt.Sprintf("local-sweep-%d", time.Now().UnixNano()), DetailType: "Scheduled Event", Source: "aws.events", Time: s.Started,
	})
	return s
}

// wireEvents builds the events function as AWS wires it
// (eventsapp.Build), its tokens checked with the gateway's HS256 secret,
// issuer and audience instead of the issuer's JWKS.
func (st *Stack) wireEvents() error {
	secret := st.cfg.JWTSecret
	verify := eventshandler.VerifierFunc(func(_ context.Context, auth string) (map[string]string, error) {
		return apigatewaylocal.VerifyToken(secret, auth, time.Now())
	})
	var err error
	st.Events, err = eventsapp.Build(eventsapp.Config{Tables: st.Tables, Poll: st.cfg.EventsPoll}, eventsapp.Deps{Dynamo: st.dynamo(Events), Verifier: verify, Log: st.cfg.Log})
	return err
}
