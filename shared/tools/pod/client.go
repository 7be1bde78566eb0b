// Package pod holds the tools that act in the agent's pod through the
// Commonly backend: read the recent conversation, post a message, read and
// append to the agent's memory, create a task. Each call authenticates as
// the user with a token the credential broker issues for the "commonly"
// audience, fetched for that call and never kept.
//
// # Backend wire
//
// Every request carries "Authorization: Bearer <brokered token>"; path
// segments are URL-escaped; bodies are JSON.
//
//	GET  /api/v1/pods/{podId}/messages?limit=N
//	     200 {"messages": [{"id", "author", "content", "createdAt"}]}
//	     the N most recent messages, oldest first
//	POST /api/v1/pods/{podId}/messages {"content", "agentName"}
//	     201 {"id"}
//	GET  /api/v1/pods/{podId}/agents/{agentName}/memory
//	     200 {"content"}    ("" when the agent has no memory yet)
//	POST /api/v1/pods/{podId}/agents/{agentName}/memory {"append"}
//	     2xx, body ignored
//	POST /api/v1/pods/{podId}/tasks {"title", "assignee"?, "notes"?, "createdBy"}
//	     201 {"id"}
//
// Failures are 4xx/5xx; their bodies are never read, so nothing the
// backend echoes reaches the model.
package pod

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

// EnvURL names the environment variable holding the backend's base URL.
const EnvURL = "COMMONLY_API_URL"

// Tool names.
const (
	NameReadContext = "commonly_read_context"
	NamePostMessage = "commonly_post_message"
	NameReadMemory  = "commonly_read_memory"
	NameWriteMemory = "commonly_write_memory"
	NameCreateTask  = "commonly_create_task"
)

// Names are the pod tools' names, in the order Tools gives them: what a
// deployment without a backend still knows of them (tools.Unconfigured).
var Names = []string{NameReadContext, NamePostMessage, NameReadMemory, NameWriteMemory, NameCreateTask}

// audience is the broker audience of Commonly tokens.
const audience = broker.AudienceCommonly

// defaultTimeout applies when Config has no HTTP client.
const defaultTimeout = 15 * time.Second

// TokenSource issues a short-lived token that lets the runtime act as a
// user. *broker.Client implements it.
type TokenSource interface {
	Token(ctx context.Context, userID, audience string) (string, error)
}

// Config wires a Client. Zero values are the documented defaults; New
// refuses what the client cannot run with.
type Config struct {
	// BaseURL is the backend, COMMONLY_API_URL; required.
	BaseURL string
	// Tokens issues the user's Commonly tokens; required.
	Tokens TokenSource
	// HTTPClient defaults to one with a 15-second timeout.
	HTTPClient *http.Client
	// Now stamps memory entries; it defaults to time.Now.
	Now func() time.Time
}

// Client talks to the Commonly backend on behalf of the turn's user.
type Client struct {
	base   *url.URL
	tokens TokenSource
	hc     *http.Client
	now    func() time.Time
}

// Poster posts a message to the turn's pod. The loop uses it for the final
// answer; *Client implements it.
type Poster interface {
	Post(ctx context.Context, env tools.Env, content string) error
}

var _ Poster = (*Client)(nil)

// New checks cfg and fills its defaults.
func New(cfg Config) (*Client, error) {
	u, err := url.Parse(strings.TrimRight(cfg.BaseURL, "/"))
	if err != nil || !httpwire.IsHTTPURL(u) {
		return nil, fmt.Errorf("pod: %s must be an http(s) URL", EnvURL)
	}
	if cfg.Tokens == nil {
		return nil, errors.New("pod: no token source")
	}
	c := &Client{base: u, tokens: cfg.Tokens, hc: cfg.HTTPClient, now: cfg.Now}
	if c.hc == nil {
		c.hc = &http.Client{Timeout: defaultTimeout}
	}
	if c.now == nil {
		c.now = time.Now
	}
	return c, nil
}

// Tools are the pod tools, in the order they are offered.
func (c *Client) Tools() []tools.Tool {
	return []tools.Tool{readContext{c}, postMessage{c}, readMemory{c}, writeMemory{c}, createTask{c}}
}
