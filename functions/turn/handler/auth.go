package handler

import (
	"slices"
	"strings"

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

// rawSubjectMalformed reports whether the token the authorizer verified
// has a sub that JSON decoding changed (turns.CheckTokenSubject): the
// claims API Gateway passes are decoded already, so the Authorization
// header's payload is read as it was sent.
func rawSubjectMalformed(req *events.APIGatewayV2HTTPRequest) bool {
	auth := req.Headers["authorization"]
	token, _ := strings.CutPrefix(auth, "Bearer ")
	return turns.CheckTokenSubject(token) != nil
}
