package pod

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"

	"github.com/commonly/runtime/shared/httpwire"
	"github.com/commonly/runtime/shared/tools"
)

// maxResponse bounds what is read from the backend.
const maxResponse = 1 << 20

// errMalformed: the backend answered 2xx with a body that could not be
// read. For a write this still means the write happened.
var errMalformed = errors.New("commonly backend: malformed answer")

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
		// The broker's error is safe, but it says nothing the model can use.
		return "", errors.New("commonly backend: could not obtain credentials for this user")
	}
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return "", fmt.Errorf("encoding request: %w", err)
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, u.String(), rd)
	if err != nil {
		return "", errors.New("pod: building the request failed")
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Accept", "application/json")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return "", fmt.Errorf("commonly backend: %w", ctx.Err())
		}
		return token, errors.New("commonly backend unreachable")
	}
	defer resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return token, statusError(resp.StatusCode)
	}
	if out == nil {
		return token, nil
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, maxResponse)).Decode(out); err != nil {
		return token, errMalformed
	}
	return token, nil
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

func statusError(status int) error {
	switch {
	case status == http.StatusUnauthorized || status == http.StatusForbidden:
		return fmt.Errorf("commonly backend: not authorized (status %d)", status)
	case status == http.StatusNotFound:
		return fmt.Errorf("commonly backend: not found (status %d)", status)
	case status == http.StatusTooManyRequests:
		return fmt.Errorf("commonly backend: rate limited, try again later (status %d)", status)
	case status >= 500:
		return fmt.Errorf("commonly backend unavailable (status %d)", status)
	}
	return fmt.Errorf("commonly backend rejected the request (status %d)", status)
}
