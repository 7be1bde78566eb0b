package e2b

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/commonly/runtime/shared/httpwire"
	"github.com/commonly/runtime/shared/redact"
)

// ErrNotFound is wrapped by errors of calls on a sandbox that no longer
// exists (404).
var ErrNotFound = errors.New("e2b: sandbox not found")

// APIError is an error status of the E2B API, decoded from its
// {"code","message","error_code"} body.
type APIError struct {
	Op     string // what we were doing, e.g. "create sandbox"
	Status int
	// Code is the body's code (usually Status again).
	Code int32
	// ErrorCode is E2B's open set of machine codes, e.g.
	// sandbox_capacity_unavailable. Unknown values are kept as they are.
	ErrorCode string
	Message   string
}

func (e *APIError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "e2b: %s: status %d", e.Op, e.Status)
	if e.ErrorCode != "" {
		fmt.Fprintf(&b, " (%s)", e.ErrorCode)
	}
	if e.Message != "" {
		b.WriteString(": ")
		b.WriteString(e.Message)
	}
	return b.String()
}

// Unwrap lets errors.Is(err, ErrNotFound) see a 404.
func (e *APIError) Unwrap() error {
	if e.Status == http.StatusNotFound {
		return ErrNotFound
	}
	return nil
}

// Retryable reports whether E2B said to try again later (no capacity,
// placement timeout).
func (e *APIError) Retryable() bool {
	return e.Status == http.StatusServiceUnavailable || e.Status == http.StatusGatewayTimeout
}

// maxErrorBody bounds how much of an error body we read and keep: it ends
// up in logs and run records.
const maxErrorBody = 4 << 10

// maxMessage bounds the message kept from an error body.
const maxMessage = 300

// apiError reads an error answer. The body is the server's words, so it
// is scrubbed of our own key, and of the other secrets the request carried
// (a sandbox's tokens), in case a proxy echoes headers, then bounded.
func (c *Client) apiError(op string, status int, body []byte, secrets ...string) *APIError {
	e := &APIError{Op: op, Status: status}
	var parsed struct {
		Code      int32  `json:"code"`
		Message   string `json:"message"`
		ErrorCode string `json:"error_code"`
	}
	if json.Unmarshal(body, &parsed) == nil {
		e.Code, e.Message, e.ErrorCode = parsed.Code, parsed.Message, parsed.ErrorCode
	} else {
		e.Message = strings.TrimSpace(string(body))
	}
	e.Message = c.scrub(e.Message, secrets)
	e.ErrorCode = c.scrub(e.ErrorCode, secrets)
	return e
}

// scrub removes our API key and every other secret from s (every copy
// and identifying piece, redact.Scrubber), then bounds it: scrubbed
// first, so a cut cannot leave part of a secret behind.
func (c *Client) scrub(s string, secrets []string) string {
	s = redact.NewScrubber(append([]string{c.cfg.APIKey}, secrets...)...).Scrub(s)
	if len(s) > maxMessage {
		s = s[:maxMessage] + "…"
	}
	return strings.ToValidUTF8(s, "")
}

// call sends one control-plane request with the API key and decodes a JSON
// answer into out (when out is not nil) on the wanted status. It returns
// the answer's header.
func (c *Client) call(ctx context.Context, op, method, path string, in, out any, want int) (http.Header, error) {
	ctx, cancel := context.WithTimeout(ctx, c.cfg.APITimeout)
	defer cancel()
	hdr, err := httpwire.Do(ctx, c.http, httpwire.Request{
		Method: method, URL: c.apiURL + path, Header: http.Header{"X-Api-Key": {c.cfg.APIKey}},
		Body: in, OK: httpwire.Status(want), Out: out, MaxBytes: maxJSONBody, ErrorBody: maxErrorBody,
	})
	e, ok := errors.AsType[*httpwire.Error](err)
	if !ok {
		return hdr, err
	}
	switch e.Kind {
	case httpwire.KindStatus:
		return hdr, c.apiError(op, e.Status, e.Body)
	case httpwire.KindDecode:
		return hdr, fmt.Errorf("e2b: %s: decode response: %w", op, e.Err)
	case httpwire.KindRequest:
		return nil, fmt.Errorf("e2b: %s: encode request: %w", op, e.Err)
	}
	// The transport's cause names the method, host and path, never the
	// headers, so the key does not leak through it.
	return nil, fmt.Errorf("e2b: %s: %w", op, e)
}

// maxJSONBody bounds a control-plane answer: a page of 100 listed
// sandboxes is a few tens of KiB.
const maxJSONBody = 8 << 20
