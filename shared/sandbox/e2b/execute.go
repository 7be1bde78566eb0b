package e2b

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"

	"github.com/commonly/runtime/shared/httpwire"
	"github.com/commonly/runtime/shared/sandbox"
)

// Handle is what addresses a running sandbox's interpreter.
type Handle struct {
	SandboxID          string
	EnvdAccessToken    string
	TrafficAccessToken string
	// Domain the sandbox lives in; empty means the client's.
	Domain string
}

// HandleOf builds the Handle of a created sandbox.
func HandleOf(sb Sandbox) Handle {
	h := Handle{SandboxID: sb.SandboxID, EnvdAccessToken: sb.EnvdAccessToken}
	if sb.TrafficAccessToken != nil {
		h.TrafficAccessToken = *sb.TrafficAccessToken
	}
	if sb.Domain != nil {
		h.Domain = *sb.Domain
	}
	return h
}

type executeRequest struct {
	Code     string `json:"code"`
	Language string `json:"language"`
}

// Execute runs code in the sandbox's default context for lang. The run's
// deadline is ctx's: the interpreter has no server-side timeout, and
// dropping the connection is what makes it interrupt the kernel. Errors
// wrap sandbox.ErrTimeout (deadline passed, partial output returned),
// sandbox.ErrLost (sandbox gone or unreachable) or ctx.Err() (cancelled).
func (c *Client) Execute(ctx context.Context, h Handle, lang sandbox.Language, code string) (sandbox.Execution, error) {
	// A stream, read as it comes: only the request is httpwire's.
	req, err := httpwire.NewRequest(ctx, http.MethodPost, c.sandboxBase(h.Domain)+"/execute", executeRequest{Code: code, Language: string(lang)})
	if err != nil {
		return sandbox.Execution{}, fmt.Errorf("e2b: execute: %w", err)
	}
	req.Header.Set("E2b-Sandbox-Id", h.SandboxID)
	req.Header.Set("E2b-Sandbox-Port", InterpreterPort)
	// The API key stays with the control plane; the sandbox host only
	// gets the per-sandbox tokens.
	if h.EnvdAccessToken != "" {
		req.Header.Set("X-Access-Token", h.EnvdAccessToken)
	}
	if h.TrafficAccessToken != "" {
		req.Header.Set("E2B-Traffic-Access-Token", h.TrafficAccessToken)
	}

	resp, err := c.http.Do(req)
	if err != nil {
		return sandbox.Execution{}, c.executeFailure(ctx, h, err)
	}
	defer resp.Body.Close()

	switch resp.StatusCode {
	case http.StatusOK:
	case http.StatusBadGateway, http.StatusNotFound:
		// The edge proxy's "sandbox not found or timed out".
		io.Copy(io.Discard, io.LimitReader(resp.Body, maxErrorBody))
		return sandbox.Execution{}, fmt.Errorf("e2b: execute in %s: status %d: %w", h.SandboxID, resp.StatusCode, sandbox.ErrLost)
	default:
		// The sandbox's own tokens are credentials too.
		body, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
		return sandbox.Execution{}, c.apiError("execute in "+h.SandboxID, resp.StatusCode, body, h.EnvdAccessToken, h.TrafficAccessToken)
	}

	exec, err := ReadExecutionTo(resp.Body, sandbox.OutputOf(ctx))
	if err != nil {
		if ctxErr := c.contextFailure(ctx, h); ctxErr != nil {
			return exec, ctxErr
		}
		return exec, fmt.Errorf("e2b: execute in %s: %w", h.SandboxID, err)
	}
	return exec, nil
}

// executeFailure classifies a transport error: our own deadline or
// cancellation first, anything else (refused, reset, DNS) means we cannot
// reach the sandbox.
func (c *Client) executeFailure(ctx context.Context, h Handle, err error) error {
	if ctxErr := c.contextFailure(ctx, h); ctxErr != nil {
		return ctxErr
	}
	return fmt.Errorf("e2b: execute in %s: %w: %w", h.SandboxID, sandbox.ErrLost, err)
}

func (c *Client) contextFailure(ctx context.Context, h Handle) error {
	switch err := ctx.Err(); {
	case errors.Is(err, context.DeadlineExceeded):
		return fmt.Errorf("e2b: execute in %s: %w", h.SandboxID, sandbox.ErrTimeout)
	case err != nil:
		return fmt.Errorf("e2b: execute in %s: %w", h.SandboxID, err)
	}
	return nil
}
