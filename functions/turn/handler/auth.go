package handler

import (
	"slices"

	"github.com/aws/aws-lambda-go/events"

	"github.com/commonly/runtime/shared/turns"
)

// ServiceScope marks the Commonly backend's tokens.
const ServiceScope = turns.ServiceScope

// callerFrom reads the caller from the JWT authorizer's claims, and from
// nothing else: a body or header can never claim an identity.
func callerFrom(req *events.APIGatewayV2HTTPRequest) turns.Caller {
	a := req.RequestContext.Authorizer
	if a == nil || a.JWT == nil {
		return turns.Caller{}
	}
	c := turns.CallerFromClaims(a.JWT.Claims)
	c.Service = c.Service || slices.Contains(a.JWT.Scopes, ServiceScope)
	return c
}
