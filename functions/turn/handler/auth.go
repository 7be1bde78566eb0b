package handler

import (
	"strings"

	"github.com/aws/aws-lambda-go/events"

	"github.com/commonly/runtime/shared/turns"
)

// ServiceScope marks the Commonly backend's tokens.
const ServiceScope = "commonly/admin"

// callerFrom reads the caller from the JWT authorizer's claims, and from
// nothing else: a body or header can never claim an identity.
func callerFrom(req *events.APIGatewayV2HTTPRequest) turns.Caller {
	a := req.RequestContext.Authorizer
	if a == nil || a.JWT == nil {
		return turns.Caller{}
	}
	sub := a.JWT.Claims["sub"]
	service := false
	// API Gateway flattens the scope claim to a space-separated string;
	// some issuers use "scp" or an array rendered as "[a b]".
	for _, claim := range []string{a.JWT.Claims["scope"], a.JWT.Claims["scp"]} {
		for _, s := range strings.Fields(strings.Trim(claim, "[]")) {
			if strings.Trim(s, `",`) == ServiceScope {
				service = true
			}
		}
	}
	for _, s := range a.JWT.Scopes {
		if s == ServiceScope {
			service = true
		}
	}
	return turns.Caller{ID: sub, Service: service}
}
