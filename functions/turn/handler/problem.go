package handler

import (
	"encoding/json"
	"errors"
	"net/http"

	"github.com/aws/aws-lambda-go/events"

	"github.com/commonly/runtime/functions/internal/problem"
)

// ProblemTypeBase prefixes every problem type; the suffix is stable per
// cause and clients switch on it.
const ProblemTypeBase = problem.TypeBase

// problemFor maps an error to its problem: the body decoder's own errors
// here, the domain's once for both HTTP functions (problem.For). Only
// the messages written there reach a client: internal error text (store,
// network, SDK) never does.
func problemFor(err error) *problem.Problem {
	var body *bodyError
	if !errors.As(err, &body) {
		return problem.For(err)
	}
	switch body.kind {
	case unsupportedMediaType:
		return problem.New(http.StatusUnsupportedMediaType, "unsupported_media_type", "Unsupported media type",
			"the body must be JSON, sent with Content-Type: application/json")
	case bodyTooLarge:
		p := problem.New(http.StatusBadRequest, "body_too_large", "Request body too large", body.Error())
		p.Field = body.field
		return p
	}
	p := problem.New(http.StatusBadRequest, "malformed_body", "Malformed request body", body.Error())
	p.Field = body.field
	return p
}

func problemResponse(p *problem.Problem) events.APIGatewayV2HTTPResponse {
	return events.APIGatewayV2HTTPResponse{StatusCode: p.Status, Headers: p.Headers(), Body: string(p.JSON())}
}

func jsonResponse(status int, v any, headers map[string]string) events.APIGatewayV2HTTPResponse {
	body, err := json.Marshal(v)
	if err != nil {
		return problemResponse(problemFor(err))
	}
	h := map[string]string{"Content-Type": "application/json"}
	for k, v := range headers {
		h[k] = v
	}
	return events.APIGatewayV2HTTPResponse{StatusCode: status, Headers: h, Body: string(body)}
}
