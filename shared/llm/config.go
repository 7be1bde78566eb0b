package llm

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
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
}

// maxTimeout is Lambda's own ceiling; a longer call could never finish.
const maxTimeout = 15 * time.Minute

// ParseTimeout reads LLM_TIMEOUT: a Go duration ("30s") or whole seconds
// ("30"); empty means DefaultTimeout.
func ParseTimeout(v string) (time.Duration, error) {
	v = strings.TrimSpace(v)
	if v == "" {
		return DefaultTimeout, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		secs, nerr := strconv.Atoi(v)
		if nerr != nil {
			return 0, fmt.Errorf("llm: LLM_TIMEOUT %q is neither a duration nor seconds", v)
		}
		d = time.Duration(secs) * time.Second
	}
	if d <= 0 || d > maxTimeout {
		return 0, fmt.Errorf("llm: LLM_TIMEOUT %s is outside (0, %s]", d, maxTimeout)
	}
	return d, nil
}
