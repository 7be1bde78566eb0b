package main

import (
	"context"
	"log/slog"
	"time"

	eventsapp "github.com/commonly/runtime/functions/events/app"
	eventshandler "github.com/commonly/runtime/functions/events/handler"
	"github.com/commonly/runtime/infra/awslocal/apigatewaylocal"
	"github.com/commonly/runtime/shared/store"
)

// eventsHandler is the events function's handler on the stand-ins: the
// same wiring as in AWS (eventsapp.Build), its tokens checked with the
// local gateway's HS256 secret, issuer and audience instead of the
// issuer's JWKS.
func eventsHandler(db store.DynamoAPI, tables store.Tables, secret []byte, log *slog.Logger) (*eventshandler.Handler, error) {
	verify := eventshandler.VerifierFunc(func(_ context.Context, auth string) (map[string]string, error) {
		return apigatewaylocal.VerifyToken(secret, auth, time.Now())
	})
	return eventsapp.Build(eventsapp.Config{Tables: tables}, eventsapp.Deps{Dynamo: db, Verifier: verify, Log: log})
}
