package app

import (
	"log/slog"

	"github.com/commonly/runtime/functions/events/handler"
	"github.com/commonly/runtime/shared/store"
	"github.com/commonly/runtime/shared/turns"
)

// Deps are what Build wires: clients built once by main (or the local
// stack's stand-ins).
type Deps struct {
	// Dynamo is the DynamoDB client; Verifier checks tokens. Required.
	Dynamo   store.DynamoAPI
	Verifier handler.Verifier
	Log      *slog.Logger
}

// Build wires the store, the watcher (its stream slots in the state
// table) and the handler.
func Build(cfg Config, d Deps) (*handler.Handler, error) {
	st, err := store.New(store.Config{DB: d.Dynamo, Tables: cfg.Tables})
	if err != nil {
		return nil, err
	}
	w, err := turns.NewWatcher(turns.WatcherConfig{Runs: st, Slots: st, StreamsPerUser: cfg.StreamsPerUser, Log: d.Log})
	if err != nil {
		return nil, err
	}
	return handler.New(handler.Config{Watcher: w, Verifier: d.Verifier, MaxStream: cfg.StreamMax, Poll: cfg.Poll, Log: d.Log})
}
