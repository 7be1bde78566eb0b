// Package github holds the tools of the "github" connector: search issues
// and read one issue, through the GitHub REST API with the user's own
// GitHub connection. The token is issued by the credential broker for the
// "github" audience at each call and never kept; the gate offers these
// tools only while the broker reports the connection active.
//
// # GitHub wire
//
// Every request carries "Authorization: Bearer <brokered token>",
// "Accept: application/vnd.github+json" and "X-GitHub-Api-Version:
// 2022-11-28", against GITHUB_API_URL (default https://api.github.com).
//
//	GET /search/issues?q=<query>&per_page=N
//	    200 {"total_count", "incomplete_results", "items": [issue]}
//	GET /repos/{owner}/{repo}/issues/{number}
//	    200 issue
//
// where issue has "number", "title", "state", "body", "html_url",
// "repository_url", "labels": [{"name"}], "comments", "user": {"login"},
// "created_at", "updated_at" and, for pull requests, "pull_request".
// Error bodies are never read.
package github

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/commonly/runtime/shared/broker"
	"github.com/commonly/runtime/shared/httpwire"
	"github.com/commonly/runtime/shared/tools"
)

// Connector is the connector these tools belong to; Audience is the
// broker audience of their token.
const (
	Connector = "github"
	Audience  = broker.AudienceGitHub
)

// Tool names.
const (
	NameSearchIssues = "github_search_issues"
	NameGetIssue     = "github_get_issue"
)

// Names are the connector's tool names, in the order Tools gives them:
// what a deployment without a broker still knows of them
// (tools.Unconfigured).
var Names = []string{NameSearchIssues, NameGetIssue}

// EnvURL names the environment variable overriding the API's base URL.
const EnvURL = "GITHUB_API_URL"

// DefaultURL is GitHub's public API.
const DefaultURL = "https://api.github.com"

// APIVersion is the REST API version the tools are written against.
const APIVersion = "2022-11-28"

const defaultTimeout = 15 * time.Second

// TokenSource issues a short-lived token for a user. *broker.Client
// implements it.
type TokenSource interface {
	Token(ctx context.Context, userID, audience string) (string, error)
}

// Config wires a Client. Zero values are the documented defaults; New
// refuses what the client cannot run with.
type Config struct {
	// BaseURL defaults to DefaultURL.
	BaseURL string
	// Tokens issues the user's GitHub tokens; required.
	Tokens TokenSource
	// HTTPClient defaults to one with a 15-second timeout.
	HTTPClient *http.Client
}

// Client calls GitHub as the turn's user.
type Client struct {
	base   *url.URL
	tokens TokenSource
	hc     *http.Client
}

// New checks cfg and fills its defaults.
func New(cfg Config) (*Client, error) {
	base := cfg.BaseURL
	if base == "" {
		base = DefaultURL
	}
	u, err := url.Parse(strings.TrimRight(base, "/"))
	if err != nil || !httpwire.IsHTTPURL(u) {
		return nil, fmt.Errorf("github: %s must be an http(s) URL", EnvURL)
	}
	if cfg.Tokens == nil {
		return nil, errors.New("github: no token source")
	}
	hc := cfg.HTTPClient
	if hc == nil {
		hc = &http.Client{Timeout: defaultTimeout}
	}
	return &Client{base: u, tokens: cfg.Tokens, hc: hc}, nil
}

// Tools are the connector's tools, in the order they are offered.
func (c *Client) Tools() []tools.Tool {
	return []tools.Tool{searchIssues{c}, getIssue{c}}
}
