package handler

import (
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/commonly/runtime/shared/turns"
)

// ProblemTypeBase prefixes every problem type; the suffix is stable per
// cause and clients switch on it.
const ProblemTypeBase = "https://commonly.dev/problems/"

// Problem is an RFC 9457 problem detail.
type Problem struct {
	Type   string `json:"type"`
	Title  string `json:"title"`
	Status int    `json:"status"`
	Detail string `json:"detail,omitempty"`
	// Field names the request field at fault, for 400s.
	Field string `json:"field,omitempty"`
	// Ceiling and spend cap details for 429: the ceiling's limit and
	// used are turns; the spend cap's limit and spent exact dollars, with
	// their integer micro-dollars.
	Limit       json.Number `json:"limit,omitempty"`
	Used        *int64      `json:"used,omitempty"`
	Spent       json.Number `json:"spent,omitempty"`
	LimitMicros *int64      `json:"limitMicros,omitempty"`
	SpentMicros *int64      `json:"spentMicros,omitempty"`
	// Reserved is what the user's turns in flight hold under the spend
	// cap, exact dollars, with its micro-dollars.
	Reserved       json.Number `json:"reserved,omitempty"`
	ReservedMicros *int64      `json:"reservedMicros,omitempty"`
	ResetsAt       string      `json:"resetsAt,omitempty"`

	// retryAfter is the Retry-After header's seconds, when there is one.
	retryAfter int64
}

func problem(status int, slug, title, detail string) *Problem {
	return &Problem{Type: ProblemTypeBase + slug, Title: title, Status: status, Detail: detail}
}

// problemFor maps a domain error to its problem, once for the whole API.
// Only the messages written here reach a client: internal error text
// (store, network, SDK) never does.
func problemFor(err error) *Problem {
	var inv *turns.InvalidError
	var ceil *turns.CeilingError
	var spend *turns.SpendCapError
	var body *bodyError
	switch {
	case errors.As(err, &body):
		switch body.kind {
		case unsupportedMediaType:
			return problem(http.StatusUnsupportedMediaType, "unsupported_media_type", "Unsupported media type",
				"the body must be JSON, sent with Content-Type: application/json")
		case bodyTooLarge:
			p := problem(http.StatusBadRequest, "body_too_large", "Request body too large", body.Error())
			p.Field = body.field
			return p
		}
		p := problem(http.StatusBadRequest, "malformed_body", "Malformed request body", body.Error())
		p.Field = body.field
		return p
	case errors.As(err, &inv):
		p := problem(http.StatusBadRequest, "invalid_field", "A field of the request is invalid", inv.Field+" "+inv.Reason)
		p.Field = inv.Field
		return p
	case errors.Is(err, turns.ErrUnauthenticated):
		return problem(http.StatusUnauthorized, "unauthenticated", "No identity", "the request carries no authenticated identity")
	case errors.Is(err, turns.ErrMalformedIdentity):
		return problem(http.StatusUnauthorized, "malformed_identity", "Malformed identity", "the token's subject is not a valid user id")
	case errors.Is(err, turns.ErrForbidden):
		return problem(http.StatusForbidden, "forbidden", "Not yours", "the caller may not act on this resource")
	case errors.Is(err, turns.ErrNotFound):
		return problem(http.StatusNotFound, "not_found", "Not found", "no such install or run")
	case errors.Is(err, turns.ErrIdempotencyConflict):
		return problem(http.StatusConflict, "idempotency_conflict", "Idempotency key reused", "this Idempotency-Key was used with a different request")
	case errors.As(err, &ceil):
		p := problem(http.StatusTooManyRequests, "turn_ceiling_reached", "Daily turn ceiling reached",
			"the daily hosted-turn ceiling of the user's plan is reached; it resets at midnight UTC")
		p.Limit, p.Used, p.ResetsAt = json.Number(strconv.FormatInt(ceil.Limit, 10)), &ceil.Used, ceil.ResetsAt.UTC().Format(time.RFC3339)
		p.retryAfter = int64(ceil.RetryAfter.Seconds()) + 1
		return p
	case errors.As(err, &spend):
		p := problem(http.StatusTooManyRequests, "spend_cap_reached", "Daily spend cap reached",
			"the user's spend today, with what their turns in flight have reserved, leaves no useful reservation under the daily cap; it resets at midnight UTC")
		limit, spent := int64(spend.Limit), int64(spend.Spent)
		reserved := int64(spend.Reserved)
		p.Limit, p.Spent, p.LimitMicros, p.SpentMicros = json.Number(spend.Limit.USD()), json.Number(spend.Spent.USD()), &limit, &spent
		p.Reserved, p.ReservedMicros = json.Number(spend.Reserved.USD()), &reserved
		p.ResetsAt = spend.ResetsAt.UTC().Format(time.RFC3339)
		p.retryAfter = int64(spend.RetryAfter.Seconds()) + 1
		return p
	case errors.Is(err, turns.ErrFallbackUnconfigured):
		p := problem(http.StatusServiceUnavailable, "fallback_unconfigured", "Fallback engine not configured",
			"this install runs on the durable-object engine, which this deployment has no address for")
		p.retryAfter = 5
		return p
	case errors.Is(err, turns.ErrUnavailable):
		p := problem(http.StatusServiceUnavailable, "unavailable", "Temporarily unavailable", "a dependency is unavailable; retry later")
		p.retryAfter = 5
		return p
	}
	return problem(http.StatusInternalServerError, "internal", "Internal error", "the request could not be completed")
}

func problemResponse(p *Problem) events.APIGatewayV2HTTPResponse {
	body, _ := json.Marshal(p)
	h := map[string]string{"Content-Type": "application/problem+json"}
	if p.retryAfter > 0 {
		h["Retry-After"] = strconv.FormatInt(p.retryAfter, 10)
	}
	return events.APIGatewayV2HTTPResponse{StatusCode: p.Status, Headers: h, Body: string(body)}
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
