package llm

import (
	"net/http"
	"time"

	"github.com/commonly/runtime/shared/httpwire"
)

// DefaultTimeout bounds one call when Config.Timeout is zero (LLM_TIMEOUT).
const DefaultTimeout = 45 * time.Second

// Config configures a Client.
type Config struct {
	// BaseURL is the proxy's OpenAI-compatible root, e.g.
	// https://litellm.example/v1; chat/completions is appended.
	BaseURL string
	// APIKey is sent as "Authorization: Bearer <key>"; empty sends none
	// (the in-process offline model needs none).
	APIKey string
	// Timeout is the deadline of one call; zero means DefaultTimeout.
	Timeout time.Duration
	// HTTPClient is optional, e.g. a client with an in-process transport.
	HTTPClient *http.Client
	// Middleware, when set, wraps each attempt's request, inside the
	// call's context (tracing.ClientSpanHTTP: the trace context and the
	// call's HTTP facts on the model call's span).
	Middleware func(*http.Request, func(*http.Request) (*http.Response, error)) (*http.Response, error)
}

// maxTimeout is Lambda's own ceiling; a longer call could never finish.
const maxTimeout = 15 * time.Minute

// ParseTimeout reads LLM_TIMEOUT: a Go duration ("30s") or whole seconds
// ("30"); empty means DefaultTimeout.
func ParseTimeout(v string) (time.Duration, error) {
	return httpwire.ParseTimeout("LLM_TIMEOUT", v, DefaultTimeout, maxTimeout)
}
