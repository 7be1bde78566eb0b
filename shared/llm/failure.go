package llm

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"

	"github.com/commonly/runtime/shared/textcap"
)

// maxErrorBody bounds how much of an error body is read for classification.
const maxErrorBody = 64 << 10

// failure turns an error of the SDK call into a *CallError. parent is the
// caller's context, callCtx the one carrying the per-call deadline.
func (c *Client) failure(parent, callCtx context.Context, httpResp *http.Response, err error) *CallError {
	// The SDK hands back the response of a non-2xx status with its body
	// re-readable; classify from it rather than from the SDK's error, whose
	// string field cannot hold LiteLLM's object-valued error.message.
	if httpResp != nil && httpResp.StatusCode >= 400 {
		body, _ := io.ReadAll(io.LimitReader(httpResp.Body, maxErrorBody))
		return c.statusFailure(httpResp.StatusCode, body)
	}
	switch {
	case parent.Err() != nil:
		return &CallError{Kind: ErrCall, Message: "call cancelled by the caller", Billed: true}
	case errors.Is(err, context.DeadlineExceeded) || callCtx.Err() != nil:
		return &CallError{Kind: ErrCall, Message: fmt.Sprintf("no answer within %s", c.timeout), Billed: true}
	case httpResp != nil:
		// A 2xx whose body could not be decoded. The decoder's text is not
		// kept: it may quote the body.
		return &CallError{Kind: ErrCall, Status: httpResp.StatusCode, Message: "malformed response body", Billed: true}
	case isDialError(err):
		// Only a failed dial proves the request never left.
		return &CallError{Kind: ErrCall, Message: "the model proxy could not be reached", Detail: c.scrub(err.Error())}
	default:
		return &CallError{Kind: ErrCall, Message: "the connection to the model proxy failed", Detail: c.scrub(err.Error()), Billed: true}
	}
}

// statusFailure classifies a non-2xx answer.
func (c *Client) statusFailure(status int, body []byte) *CallError {
	e := parseErrorBody(body)
	switch {
	case isRefusal(status, e):
		// Fixed text: the body may quote the blocked prompt.
		return &CallError{Kind: ErrGuardrail, Status: status, Message: "request refused by the proxy's guardrail or content policy", Billed: true}
	case status == http.StatusUnauthorized || status == http.StatusForbidden:
		// Fixed text: LiteLLM quotes part of the presented key here.
		return &CallError{Kind: ErrCall, Status: status, Message: "the model proxy rejected the credentials"}
	}
	// The body's words are the upstream's: the log's, scrubbed before
	// they are clipped, so a clip cannot leave half a key behind.
	var detail []string
	if e.Type != "" {
		detail = append(detail, "type "+textcap.Bytes(c.scrub(e.Type), 64))
	}
	if e.Message != "" {
		detail = append(detail, textcap.Bytes(c.scrub(e.Message), 600))
	}
	return &CallError{
		Kind:    ErrCall,
		Status:  status,
		Message: statusWords(status),
		Detail:  strings.Join(detail, ": "),
		// 4xx other than a timeout are rejections before generation.
		Billed: status >= 500 || status == http.StatusRequestTimeout,
	}
}

// statusWords says what an error status of the proxy means, in our words.
func statusWords(status int) string {
	switch {
	case status == http.StatusTooManyRequests:
		return "the model proxy is rate limiting"
	case status == http.StatusRequestTimeout || status == http.StatusGatewayTimeout:
		return "the model proxy timed out"
	case status >= 500:
		return "the model proxy or its provider failed"
	}
	return "the model proxy rejected the request"
}

func isDialError(err error) bool {
	var op *net.OpError
	if errors.As(err, &op) && op.Op == "dial" {
		return true
	}
	var dns *net.DNSError
	return errors.As(err, &dns)
}
