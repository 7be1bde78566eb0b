package pod

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"

	"github.com/commonly/runtime/shared/httpwire"
	"github.com/commonly/runtime/shared/tools"
)

// maxResponse bounds what is read from the backend.
const maxResponse = 1 << 20

// call sends one request to the backend as env's user and decodes a 2xx
// answer into out when out is not nil. It returns the token it used so
// that the caller can scrub it from what the backend sent back. Its
// errors are short, safe to show the model, and never hold a token or a
// response body.
func (c *Client) call(ctx context.Context, env tools.Env, method string, segments []string, query url.Values, body, out any) (string, error) {
	if env.UserID == "" {
		return "", errors.New("pod: the turn has no user")
	}
	u, err := c.endpoint(segments, query)
	if err != nil {
		return "", err
	}
	token, err := c.tokens.Token(ctx, env.UserID, audience)
	if err != nil {
		if ctx.Err() != nil {
			return "", fmt.Errorf("commonly backend: %w", ctx.Err())
		}
		// The broker's error is safe, but it says nothing the model can
		// use: it goes to the log.
		return "", &tools.CallError{Message: "commonly backend: could not obtain credentials for this user", Cause: err}
	}
	var header http.Header
	if env.IdempotencyKey != "" && method != http.MethodGet {
		// The same call in every attempt of the run: the backend drops a
		// repeat (docs/architecture.md, "Resumed runs").
		header = http.Header{"Idempotency-Key": {env.IdempotencyKey}}
	}
	_, err = httpwire.Do(ctx, c.hc, httpwire.Request{Method: method, URL: u.String(), Bearer: token, Header: header, Body: body, Out: out, MaxBytes: maxResponse})
	if e, ok := errors.AsType[*httpwire.Error](err); ok {
		if e.Kind == httpwire.KindContext {
			return "", fmt.Errorf("commonly backend: %w", e.Err)
		}
		return token, failure(e)
	}
	return token, err
}

// failure puts a failed call in words the model can use; the error keeps
// the status and the cause for the log.
func failure(e *httpwire.Error) error {
	switch e.Kind {
	case httpwire.KindTransport:
		return e.WithMessage("commonly backend unreachable")
	case httpwire.KindStatus:
		return e.WithMessage(statusText(e.Status))
	case httpwire.KindDecode:
		return e.WithMessage("commonly backend: malformed answer")
	}
	return e.WithMessage("pod: building the request failed")
}

// malformed reports a 2xx answer whose body could not be read. For a
// write this still means the write happened.
func malformed(err error) bool {
	e, ok := errors.AsType[*httpwire.Error](err)
	return ok && e.Kind == httpwire.KindDecode
}

// endpoint appends escaped segments to the base URL. An empty, "." or
// ".." id is refused: escaping leaves dots alone and path cleaning would
// let an id reach another endpoint.
func (c *Client) endpoint(segments []string, query url.Values) (*url.URL, error) {
	u, err := httpwire.JoinSegments(c.base, segments...)
	if bad, ok := errors.AsType[*httpwire.SegmentError](err); ok {
		return nil, fmt.Errorf("pod: invalid identifier %q in the turn", bad.Segment)
	}
	if err != nil {
		return nil, fmt.Errorf("pod: %w", err)
	}
	u.RawQuery = query.Encode()
	return u, nil
}

func statusText(status int) string {
	switch {
	case status == http.StatusUnauthorized || status == http.StatusForbidden:
		return fmt.Sprintf("commonly backend: not authorized (status %d)", status)
	case status == http.StatusNotFound:
		return fmt.Sprintf("commonly backend: not found (status %d)", status)
	case status == http.StatusTooManyRequests:
		return fmt.Sprintf("commonly backend: rate limited, try again later (status %d)", status)
	case status >= 500:
		return fmt.Sprintf("commonly backend unavailable (status %d)", status)
	}
	return fmt.Sprintf("commonly backend rejected the request (status %d)", status)
}
