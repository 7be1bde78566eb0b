package llm

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/commonly/runtime/shared/httpwire"
	"github.com/commonly/runtime/shared/redact"
)

// Client calls an OpenAI-compatible chat-completions endpoint.
type Client struct {
	chat    openai.ChatCompletionService
	timeout time.Duration
	// scrubber removes the API key, and every piece of it, from what the
	// proxy says.
	scrubber *redact.Scrubber
}

// New builds a Client. It reads nothing from the environment: the SDK's
// client constructor would pick up ambient OPENAI_* variables, so only the
// chat-completions service is built, from explicit options.
func New(cfg Config) (*Client, error) {
	u, err := url.Parse(cfg.BaseURL)
	if err != nil || !httpwire.IsHTTPURL(u) {
		// The URL itself is not echoed: it may carry credentials.
		return nil, errors.New("llm: base URL must be an absolute http(s) URL")
	}
	timeout := cfg.Timeout
	if timeout == 0 {
		timeout = DefaultTimeout
	}
	if timeout < 0 {
		return nil, fmt.Errorf("llm: timeout must be positive, got %s", timeout)
	}
	hc := cfg.HTTPClient
	if hc == nil {
		// No client-level Timeout: the per-call context deadline governs.
		hc = &http.Client{}
	}
	opts := []option.RequestOption{
		option.WithBaseURL(cfg.BaseURL),
		option.WithHTTPClient(hc),
		// A call that reached the model may have been billed; retrying is
		// the loop's decision, never the SDK's.
		option.WithMaxRetries(0),
	}
	if cfg.APIKey != "" {
		opts = append(opts, option.WithAPIKey(cfg.APIKey))
	}
	if cfg.Middleware != nil {
		opts = append(opts, option.WithMiddleware(cfg.Middleware))
	}
	return &Client{
		chat:     openai.NewChatCompletionService(opts...),
		timeout:  timeout,
		scrubber: redact.NewScrubber(cfg.APIKey),
	}, nil
}

// Complete makes one non-streaming chat-completions call.
//
// Every failure is a *CallError whose Kind is ErrGuardrail or ErrCall. When
// a 200 answer ends abnormally (finish_reason length, content_filter,
// insufficient_system_resource, unknown; an empty completion), the decoded
// Response is returned together with the error so that the caller can
// still account the usage it was billed for.
func (c *Client) Complete(ctx context.Context, req Request) (*Response, error) {
	params, err := chatParams(req)
	if err != nil {
		return nil, &CallError{Kind: ErrCall, Message: "the request could not be encoded", Detail: c.scrub(err.Error())}
	}
	callCtx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	if req.Stream {
		return c.stream(ctx, callCtx, params, req)
	}

	var httpResp *http.Response
	completion, err := c.chat.New(callCtx, params, option.WithResponseInto(&httpResp))
	if err != nil {
		return nil, c.failure(ctx, callCtx, httpResp, err)
	}
	return c.decode(completion, httpResp)
}
