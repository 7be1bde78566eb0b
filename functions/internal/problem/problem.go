// Package problem maps the domain's errors to the HTTP API's problems
// (RFC 9457, application/problem+json), once for both HTTP functions: the
// turn function behind API Gateway and the events function behind its
// URL. Only the texts written here reach a client: internal error text
// (store, network, SDK) never does. Every type is a component schema of
// api/openapi.yaml (its *Problem schemas), and docs/api.md lists them
// ("Errors"); the handlers' tests hold each response to the document.
package problem

import (
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/commonly/runtime/shared/turns"
)

// TypeBase prefixes every problem type; the suffix is stable per cause
// and clients switch on it.
const TypeBase = "https://commonly.dev/problems/"

// Realm names the API in a Bearer challenge (WWW-Authenticate).
const Realm = "commonly"

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
	// their integer micro-dollars; the stream cap's limit is streams.
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

	// RetryAfter is the Retry-After header's seconds, when there is one.
	RetryAfter int64 `json:"-"`
	// Challenge is the WWW-Authenticate header of a 401 (RFC 6750).
	Challenge string `json:"-"`
}

// New is a problem of type TypeBase+slug.
func New(status int, slug, title, detail string) *Problem {
	return &Problem{Type: TypeBase + slug, Title: title, Status: status, Detail: detail}
}

// RouteNotFound and MethodNotAllowed answer a path no route matches and
// a method a path does not take.
func RouteNotFound(detail string) *Problem {
	return New(http.StatusNotFound, "route_not_found", "No such route", detail)
}

func MethodNotAllowed(detail string) *Problem {
	return New(http.StatusMethodNotAllowed, "method_not_allowed", "Method not allowed", detail)
}

// Invalid is a 400 invalid_field for field.
func Invalid(field, reason string) *Problem {
	p := New(http.StatusBadRequest, "invalid_field", "A field of the request is invalid", field+" "+reason)
	p.Field = field
	return p
}

// bearer is a Bearer challenge; with no error, for a request that sent
// no token (RFC 6750 §3: no error code then).
func bearer(errCode, description string) string {
	c := `Bearer realm="` + Realm + `"`
	if errCode != "" {
		c += `, error="` + errCode + `"`
	}
	if description != "" {
		c += `, error_description="` + description + `"`
	}
	return c
}

// unauthorized is a 401 whose WWW-Authenticate challenge says why
// (RFC 6750's error and error_description, when there is one).
func unauthorized(typ, title, detail, errCode, description string) *Problem {
	p := New(http.StatusUnauthorized, typ, title, detail)
	p.Challenge = bearer(errCode, description)
	return p
}

// For maps a domain error to its problem.
func For(err error) *Problem {
	var inv *turns.InvalidError
	var ceil *turns.CeilingError
	var spend *turns.SpendCapError
	var streams *turns.StreamCapError
	switch {
	case errors.As(err, &inv):
		return Invalid(inv.Field, inv.Reason)
	case errors.Is(err, turns.ErrMalformedIdentity):
		return unauthorized("malformed_identity", "Malformed identity", "the token's subject is not a valid user id", "invalid_token", "The token's subject is not a valid user id")
	case errors.Is(err, turns.ErrTokenExpired):
		return unauthorized("unauthenticated", "No identity", "the bearer token has expired", "invalid_token", "The access token expired")
	case errors.Is(err, turns.ErrInvalidToken):
		return unauthorized("unauthenticated", "No identity", "the bearer token is not valid for this API", "invalid_token", "")
	case errors.Is(err, turns.ErrUnauthenticated):
		return unauthorized("unauthenticated", "No identity", "the request carries no authenticated identity", "", "")
	case errors.Is(err, turns.ErrForbidden):
		return New(http.StatusForbidden, "forbidden", "Not yours", "the caller may not act on this resource")
	case errors.Is(err, turns.ErrNotFound):
		return New(http.StatusNotFound, "not_found", "Not found", "no such install or run")
	case errors.Is(err, turns.ErrIdempotencyConflict):
		return New(http.StatusConflict, "idempotency_conflict", "Idempotency key reused", "this Idempotency-Key was used with a different request")
	case errors.As(err, &ceil):
		p := New(http.StatusTooManyRequests, "turn_ceiling_reached", "Daily turn ceiling reached",
			"the daily hosted-turn ceiling of the user's plan is reached; it resets at midnight UTC")
		p.Limit, p.Used, p.ResetsAt = json.Number(strconv.FormatInt(ceil.Limit, 10)), &ceil.Used, ceil.ResetsAt.UTC().Format(time.RFC3339)
		p.RetryAfter = int64(ceil.RetryAfter.Seconds()) + 1
		return p
	case errors.As(err, &spend):
		p := New(http.StatusTooManyRequests, "spend_cap_reached", "Daily spend cap reached",
			"the user's spend today, with what their turns in flight have reserved, leaves no useful reservation under the daily cap; it resets at midnight UTC")
		limit, spent := int64(spend.Limit), int64(spend.Spent)
		reserved := int64(spend.Reserved)
		p.Limit, p.Spent, p.LimitMicros, p.SpentMicros = json.Number(spend.Limit.USD()), json.Number(spend.Spent.USD()), &limit, &spent
		p.Reserved, p.ReservedMicros = json.Number(spend.Reserved.USD()), &reserved
		p.ResetsAt = spend.ResetsAt.UTC().Format(time.RFC3339)
		p.RetryAfter = int64(spend.RetryAfter.Seconds()) + 1
		return p
	case errors.As(err, &streams):
		p := New(http.StatusTooManyRequests, "too_many_streams", "Too many open event streams",
			"the user has as many event streams open as allowed; close one, or retry later")
		p.Limit = json.Number(strconv.Itoa(streams.Limit))
		p.RetryAfter = max(1, int64(streams.RetryAfter.Seconds()))
		return p
	case errors.Is(err, turns.ErrFallbackUnconfigured):
		p := New(http.StatusServiceUnavailable, "fallback_unconfigured", "Fallback engine not configured",
			"this install runs on the durable-object engine, which this deployment has no address for")
		p.RetryAfter = 5
		return p
	case errors.Is(err, turns.ErrUnavailable):
		return Unavailable()
	}
	return New(http.StatusInternalServerError, "internal", "Internal error", "the request could not be completed")
}

// Unavailable is the 503 of a dependency that could not be reached.
func Unavailable() *Problem {
	p := New(http.StatusServiceUnavailable, "unavailable", "Temporarily unavailable", "a dependency is unavailable; retry later")
	p.RetryAfter = 5
	return p
}

// Headers are the response's headers: the content type, Retry-After and
// WWW-Authenticate when the problem has them.
func (p *Problem) Headers() map[string]string {
	h := map[string]string{"Content-Type": "application/problem+json"}
	if p.RetryAfter > 0 {
		h["Retry-After"] = strconv.FormatInt(p.RetryAfter, 10)
	}
	if p.Challenge != "" {
		h["WWW-Authenticate"] = p.Challenge
	}
	return h
}

// JSON is the response's body.
func (p *Problem) JSON() []byte {
	body, _ := json.Marshal(p)
	return body
}

// Write answers p on w.
func (p *Problem) Write(w http.ResponseWriter) {
	for k, v := range p.Headers() {
		w.Header().Set(k, v)
	}
	w.WriteHeader(p.Status)
	_, _ = w.Write(p.JSON())
}
