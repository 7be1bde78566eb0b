package app

import (
	"errors"
	"log/slog"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge"

	"github.com/commonly/runtime/functions/alarm/handler"
	"github.com/commonly/runtime/shared/ledger"
	"github.com/commonly/runtime/shared/metrics"
	"github.com/commonly/runtime/shared/store"
)

// Deps are the clients built once per container, outside the handler.
type Deps struct {
	Dynamo      *dynamodb.Client
	EventBridge *eventbridge.Client
	// Now stamps alarms and times batches; nil is time.Now.
	Now func() time.Time
	// Log is Lambda's logger in the function; nil is slog.Default().
	Log *slog.Logger
	// Metrics receives CloudWatch EMF events (stdout in Lambda); nil discards.
	Metrics *metrics.Emitter
}

// Build wires the alarm function's handler.
func Build(cfg Config, d Deps) (*handler.Handler, error) {
	if d.Dynamo == nil || d.EventBridge == nil {
		return nil, errors.New("alarm build: DynamoDB and EventBridge clients are required")
	}
	pub, err := ledger.NewEventBridge(ledger.EventBridgeConfig{Client: d.EventBridge, Bus: cfg.EventBus, Now: d.Now})
	if err != nil {
		return nil, err
	}
	st, err := store.New(store.Config{DB: d.Dynamo, Tables: store.Tables{State: cfg.StateTable}})
	if err != nil {
		return nil, err
	}
	l, err := ledger.New(ledger.Config{
		Store:     st,
		Publisher: pub,
		Threshold: cfg.Threshold,
		Now:       d.Now,
	})
	if err != nil {
		return nil, err
	}
	return handler.New(handler.Config{Ledger: l, Log: d.Log, Metrics: d.Metrics, Now: d.Now})
}
