// Package e2b is a small client of the public E2B API (there is no official
// Go SDK): the control plane (create, list, kill, timeout) and the
// code interpreter's /execute stream. It implements sandbox.Provider with
// the settings a turn needs and cannot be talked out of: no internet, no
// environment variables, a 180 s lifetime.
package e2b

import (
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/commonly/runtime/shared/retry"
)

// Defaults of Config.
const (
	DefaultDomain   = "e2b.app"
	DefaultTemplate = "code-interpreter-v1"
	// InterpreterPort is the code interpreter's port inside the sandbox.
	InterpreterPort = "49999"
	// maxRetryBackoff caps the wait between create attempts.
	maxRetryBackoff = 8 * time.Second
)

// Config configures a Client.
type Config struct {
	APIKey string
	// Stage is the deployment (STAGE), required: every sandbox is tagged
	// with it (MetaStage), so that this stage's reaper finds them and no
	// other stage's reaper kills them.
	Stage string
	// Domain defaults to e2b.app.
	Domain string
	// APIURL defaults to https://api.{Domain}.
	APIURL string
	// SandboxURL is the proxy that reaches a sandbox's ports, addressed by
	// the E2b-Sandbox-Id and E2b-Sandbox-Port headers. It defaults to
	// https://sandbox.{domain}, with the domain the sandbox was created in.
	SandboxURL string
	// Template defaults to code-interpreter-v1.
	Template string
	// HTTPClient defaults to a client without an overall timeout (an
	// execution streams for up to its deadline) that bounds connection
	// set-up and the wait for response headers.
	HTTPClient *http.Client
	// APITimeout bounds each control-plane call; default 30 s.
	APITimeout time.Duration
	// CreateRetries is how many times a create refused for capacity (503,
	// 504) is retried; default 2. Negative disables retries.
	CreateRetries int
	// RetryBackoff is the ceiling of the first (jittered) wait between
	// create attempts, doubled each time up to 8 s; default 500 ms.
	RetryBackoff time.Duration
	// Now defaults to time.Now.
	Now func() time.Time
}

// Client talks to one E2B team. It is safe for concurrent use.
type Client struct {
	cfg           Config
	apiURL        string
	sandboxURL    string // empty: derived per sandbox from its domain
	http          *http.Client
	now           func() time.Time
	createRetries int
	createBackoff retry.Backoff
}

// New checks cfg and fills its defaults.
func New(cfg Config) (*Client, error) {
	if strings.TrimSpace(cfg.APIKey) == "" {
		return nil, errors.New("e2b: APIKey is required")
	}
	if strings.TrimSpace(cfg.Stage) == "" {
		return nil, errors.New("e2b: Stage is required: it tags every sandbox for this deployment's reaper")
	}
	if cfg.Domain == "" {
		cfg.Domain = DefaultDomain
	}
	if cfg.APIURL == "" {
		cfg.APIURL = "https://api." + cfg.Domain
	}
	if cfg.Template == "" {
		cfg.Template = DefaultTemplate
	}
	if cfg.APITimeout <= 0 {
		cfg.APITimeout = 30 * time.Second
	}
	if cfg.RetryBackoff <= 0 {
		cfg.RetryBackoff = 500 * time.Millisecond
	}
	retries := cfg.CreateRetries
	switch {
	case retries == 0:
		retries = 2
	case retries < 0:
		retries = 0
	}
	hc := cfg.HTTPClient
	if hc == nil {
		hc = defaultHTTPClient()
	}
	now := cfg.Now
	if now == nil {
		now = time.Now
	}
	return &Client{
		cfg:           cfg,
		apiURL:        strings.TrimRight(cfg.APIURL, "/"),
		sandboxURL:    strings.TrimRight(cfg.SandboxURL, "/"),
		http:          hc,
		now:           now,
		createRetries: retries,
		createBackoff: retry.Backoff{Base: cfg.RetryBackoff, Max: maxRetryBackoff},
	}, nil
}

func defaultHTTPClient() *http.Client {
	t := http.DefaultTransport.(*http.Transport).Clone()
	// The SDKs wait 60 s for headers; the interpreter sends them as soon as
	// the execution starts, so a longer wait means the sandbox is stuck.
	t.ResponseHeaderTimeout = 60 * time.Second
	return &http.Client{Transport: t}
}

// sandboxBase is the proxy URL for a sandbox created in domain.
func (c *Client) sandboxBase(domain string) string {
	if c.sandboxURL != "" {
		return c.sandboxURL
	}
	if domain == "" {
		domain = c.cfg.Domain
	}
	return "https://sandbox." + domain
}
