package app

import (
	"errors"
	"log/slog"
	"net/http"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/commonly/runtime/functions/reaper/handler"
	"github.com/commonly/runtime/shared/dispatch"
	"github.com/commonly/runtime/shared/metrics"
	"github.com/commonly/runtime/shared/reaper"
	"github.com/commonly/runtime/shared/redact"
	"github.com/commonly/runtime/shared/sandbox"
	"github.com/commonly/runtime/shared/sandbox/e2b"
	"github.com/commonly/runtime/shared/store"
	"github.com/commonly/runtime/shared/turns"
)

// e2bCallTimeout bounds each E2B call of a sweep: a page or a kill that
// hangs longer is given up, and the next sweep tries again.
const e2bCallTimeout = 10 * time.Second

// Deps are the clients built once per container, outside the handler.
type Deps struct {
	Dynamo *dynamodb.Client
	// Lambda re-dispatches runs to the turn function (TURN_FUNCTION_NAME);
	// required when that is set.
	Lambda dispatch.LambdaAPI
	// HTTP reaches E2B; nil is the E2B client's own.
	HTTP *http.Client
	// Local is the local provider whose sessions the reaper kills with
	// SANDBOX=local (the local stack, which owns them); nil kills none.
	Local sandbox.Inventory
	// Now is the clock; nil is time.Now.
	Now func() time.Time
	// Log is Lambda's logger in the function; nil is slog.Default().
	Log *slog.Logger
	// Metrics receives CloudWatch EMF events (stdout in Lambda); nil discards.
	Metrics *metrics.Emitter
}

// Built is a wired reaper function.
type Built struct {
	Handler *handler.Handler
	Reaper  *reaper.Reaper
}

// Build wires the reaper: the store, the runs' Reclaimer, E2B's client
// or the local provider, the sweep, and the handler.
func Build(cfg Config, d Deps) (*Built, error) {
	if d.Dynamo == nil {
		return nil, errors.New("reaper build: a DynamoDB client is required")
	}
	if d.Now == nil {
		d.Now = time.Now
	}
	if d.Log == nil {
		d.Log = slog.Default()
	}
	// Every line is scrubbed of the E2B key: E2B's answers reach the log.
	log := slog.New(redact.NewScrubber(cfg.Secrets()...).Handler(d.Log.Handler()))
	st, err := store.New(store.Config{DB: d.Dynamo, Tables: cfg.Tables})
	if err != nil {
		return nil, err
	}
	var redispatch turns.Dispatcher
	if cfg.TurnFunction != "" {
		if d.Lambda == nil {
			return nil, errors.New("reaper build: TURN_FUNCTION_NAME is set without a Lambda client")
		}
		redispatch = dispatch.Lambda{Client: d.Lambda, FunctionName: cfg.TurnFunction}
	}
	rc, err := turns.NewReclaimer(turns.ReclaimerConfig{Store: st, Dispatcher: redispatch, Now: d.Now, Log: log})
	if err != nil {
		return nil, err
	}
	reaperCfg := reaper.Config{
		Stage: cfg.Stage, Registry: st, Runs: rc, Lifetime: cfg.Lifetime,
		Now: d.Now, Log: log, Metrics: d.Metrics,
	}
	switch cfg.Sandbox {
	case SandboxE2B:
		client, err := e2b.New(e2b.Config{
			APIKey: cfg.E2BAPIKey, Stage: cfg.Stage, Domain: cfg.E2BDomain, APIURL: cfg.E2BAPIURL,
			HTTPClient: d.HTTP, APITimeout: e2bCallTimeout, Now: d.Now,
		})
		if err != nil {
			return nil, err
		}
		reaperCfg.Providers = []sandbox.Inventory{client}
	case SandboxLocal:
		if d.Local != nil {
			reaperCfg.Providers = []sandbox.Inventory{d.Local}
		}
	}
	rp, err := reaper.New(reaperCfg)
	if err != nil {
		return nil, err
	}
	h, err := handler.New(handler.Config{Sweeper: rp, Log: log, Now: d.Now})
	if err != nil {
		return nil, err
	}
	return &Built{Handler: h, Reaper: rp}, nil
}
