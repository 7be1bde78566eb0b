// Package broker is the client of the credential broker. The runtime never
// stores a user's credentials: each tool call that needs one asks the
// broker for a short-lived token, uses it for that call and forgets it.
//
// # Wire
//
// Every request carries the runtime's service credential, BROKER_TOKEN, as
// "Authorization: Bearer <token>". Path segments are URL-escaped.
//
//	GET {BROKER_URL}/v1/users/{userId}/connections/{connector}
//	200 {"connector": "github", "status": "active" | "revoked" | "expired" | "missing"}
//	404 the user has no such connection (the same as "missing")
//
//	POST {BROKER_URL}/v1/users/{userId}/tokens
//	Content-Type: application/json
//	{"audience": "commonly" | "github", "scope": "optional, audience-specific"}
//	200 {"token": "…", "expiresAt": "2026-08-20T10:05:00Z"}
//	404 the user has no active connection for that audience
//
// For both, 401 and 403 mean the broker refused the service credential;
// any other status is the broker being unavailable. A "commonly" token
// lets the runtime act in Commonly as the user; a "github" token is the
// user's GitHub connection.
//
// Errors from this package never hold a token, the service credential or
// a response body: only the operation, the status and a sentinel.
package broker

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/commonly/runtime/shared/httpwire"
)

// Environment variables main reads to build a Client.
const (
	EnvURL   = "BROKER_URL"
	EnvToken = "BROKER_TOKEN"
)

// Audiences a token can be asked for.
const (
	AudienceCommonly = "commonly"
	AudienceGitHub   = "github"
)

// Connection statuses.
const (
	StatusActive  = "active"
	StatusRevoked = "revoked"
	StatusExpired = "expired"
	StatusMissing = "missing"
)

var (
	// ErrNotConnected: the user has no active connection for the audience.
	ErrNotConnected = errors.New("broker: user not connected")
	// ErrUnauthorized: the broker refused the runtime's service credential.
	ErrUnauthorized = errors.New("broker: service credential refused")
	// ErrUnavailable: the broker could not be reached or answered badly.
	ErrUnavailable = errors.New("broker: unavailable")
)

// maxResponse bounds what is read from the broker: its answers are tiny.
const maxResponse = 64 << 10

// defaultTimeout applies when Config has no client.
const defaultTimeout = 10 * time.Second

// Client asks the broker about a user's connections and for tokens.
type Client struct {
	base  *url.URL
	token string
	hc    *http.Client
}

// Config configures a Client. Zero values are the documented defaults;
// New refuses what the client cannot run with.
type Config struct {
	// BaseURL is BROKER_URL, an http(s) URL; required.
	BaseURL string
	// Token is BROKER_TOKEN, the runtime's service credential; required.
	Token string
	// HTTPClient nil means a client with a 10-second timeout.
	HTTPClient *http.Client
}

// New checks cfg and fills its defaults.
func New(cfg Config) (*Client, error) {
	u, err := url.Parse(strings.TrimRight(cfg.BaseURL, "/"))
	if err != nil || !httpwire.IsHTTPURL(u) {
		return nil, fmt.Errorf("broker: %s must be an http(s) URL", EnvURL)
	}
	if strings.TrimSpace(cfg.Token) == "" {
		return nil, fmt.Errorf("broker: %s is empty", EnvToken)
	}
	hc := cfg.HTTPClient
	if hc == nil {
		hc = &http.Client{Timeout: defaultTimeout}
	}
	return &Client{base: u, token: cfg.Token, hc: hc}, nil
}

// do sends a request and decodes a 200 answer into out. It returns the
// status for the caller to interpret the non-200 ones it knows about.
func (c *Client) do(ctx context.Context, method string, segments []string, body, out any) (int, error) {
	u, err := join(c.base, segments)
	if err != nil {
		return 0, err
	}
	_, err = httpwire.Do(ctx, c.hc, httpwire.Request{
		Method: method, URL: u.String(), Bearer: c.token, Body: body,
		OK: httpwire.Status(http.StatusOK), Out: out, MaxBytes: maxResponse,
	})
	e, ok := errors.AsType[*httpwire.Error](err)
	switch {
	case !ok:
		return http.StatusOK, err
	case e.Kind == httpwire.KindStatus && (e.Status == http.StatusUnauthorized || e.Status == http.StatusForbidden):
		return e.Status, fmt.Errorf("%w (status %d)", ErrUnauthorized, e.Status)
	case e.Kind == httpwire.KindStatus:
		return e.Status, nil
	case e.Kind == httpwire.KindDecode:
		// Not %w: a decoder error can quote the body, which holds a token.
		return e.Status, fmt.Errorf("%w: malformed answer", ErrUnavailable)
	case e.Kind == httpwire.KindRequest:
		return 0, fmt.Errorf("%w: building request", ErrUnavailable)
	}
	// The transport's cause names the URL without its query: only ids.
	return 0, fmt.Errorf("%w: %w", ErrUnavailable, e)
}

// join appends escaped path segments to base. A "." or ".." segment is
// refused: escaping leaves dots alone, and path cleaning would let an id
// climb to another endpoint of the broker. (An empty one is refused too,
// but required has already refused blank ids.)
func join(base *url.URL, segments []string) (*url.URL, error) {
	u, err := httpwire.JoinSegments(base, segments...)
	if bad, ok := errors.AsType[*httpwire.SegmentError](err); ok {
		return nil, fmt.Errorf("broker: %q is not a valid path segment", bad.Segment)
	}
	if err != nil {
		return nil, fmt.Errorf("broker: %w", err)
	}
	return u, nil
}

func unexpected(status int) error {
	return fmt.Errorf("%w (status %d)", ErrUnavailable, status)
}

func required(fields ...string) error {
	for i := 0; i < len(fields); i += 2 {
		if strings.TrimSpace(fields[i+1]) == "" {
			return fmt.Errorf("broker: %s is empty", fields[i])
		}
	}
	return nil
}
