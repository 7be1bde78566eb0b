// Package search is commonly_web_search: a web search made by the runtime
// itself, over HTTPS to Exa or Tavily, never from inside the sandbox
// (which has no network and must not see the API key).
//
// # Provider wire
//
// Exa (SEARCH_PROVIDER=exa, default base https://api.exa.ai):
//
//	POST {base}/search
//	x-api-key: <SEARCH_API_KEY>
//	{"query", "numResults", "contents": {"text": {"maxCharacters": 500}}}
//	200 {"results": [{"title", "url", "text", "highlights": [...]}, ...]}
//
// Tavily (SEARCH_PROVIDER=tavily, default base https://api.tavily.com):
//
//	POST {base}/search
//	Authorization: Bearer <SEARCH_API_KEY>
//	{"query", "max_results"}
//	200 {"results": [{"title", "url", "content"}, ...]}
//
// The model sees at most maxResults results of a title, a URL and a
// snippet of at most 500 characters. Error bodies are never kept.
package search

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/commonly/runtime/shared/httpwire"
	"github.com/commonly/runtime/shared/llm"
	"github.com/commonly/runtime/shared/redact"
	"github.com/commonly/runtime/shared/tools"
)

// Name is the tool's name.
const Name = "commonly_web_search"

// Providers.
const (
	ProviderExa    = "exa"
	ProviderTavily = "tavily"
)

// Environment variables that configure the tool (read by the turn
// function's configuration; named here for its messages).
const (
	EnvProvider = "SEARCH_PROVIDER"
	EnvAPIKey   = "SEARCH_API_KEY"
	EnvURL      = "SEARCH_API_URL"
)

var defaultURLs = map[string]string{
	ProviderExa:    "https://api.exa.ai",
	ProviderTavily: "https://api.tavily.com",
}

const (
	defaultTimeout    = 20 * time.Second
	maxResponse       = 2 << 20
	defaultMaxResults = 5
	maxMaxResults     = 10
	maxQuery          = 1000
	maxSnippet        = 500
	maxTitle          = 300
	maxURL            = 2048
)

// Config wires the tool. Zero values are the documented defaults; New
// refuses what the tool cannot run with.
type Config struct {
	// Provider is exa or tavily; required.
	Provider string
	// APIKey is SEARCH_API_KEY; required.
	APIKey string
	// BaseURL overrides the provider's public endpoint (tests, proxies).
	BaseURL string
	// HTTPClient defaults to one with a 20-second timeout.
	HTTPClient *http.Client
}

var _ tools.Tool = (*Tool)(nil)

// Tool is commonly_web_search.
type Tool struct {
	provider provider
	name     string
	key      string
	endpoint string
	hc       *http.Client
}

// provider speaks one provider's search: the request's body and
// credential, and the answer's hits.
type provider interface {
	body(query string, n int) any
	authorize(r *httpwire.Request, key string)
	results(body io.Reader) ([]result, error)
}

// result is one hit as the model sees it.
type result struct {
	Title   string `json:"title"`
	URL     string `json:"url"`
	Snippet string `json:"snippet"`
}

// New checks cfg and fills its defaults.
func New(cfg Config) (*Tool, error) {
	var p provider
	switch cfg.Provider {
	case ProviderExa:
		p = exa{}
	case ProviderTavily:
		p = tavily{}
	default:
		return nil, fmt.Errorf("search: %s %q is not %q or %q", EnvProvider, cfg.Provider, ProviderExa, ProviderTavily)
	}
	if strings.TrimSpace(cfg.APIKey) == "" {
		return nil, fmt.Errorf("search: %s is empty", EnvAPIKey)
	}
	base := cfg.BaseURL
	if base == "" {
		base = defaultURLs[cfg.Provider]
	}
	u, err := url.Parse(strings.TrimRight(base, "/"))
	if err != nil || !httpwire.IsHTTPURL(u) {
		return nil, fmt.Errorf("search: %s must be an http(s) URL", EnvURL)
	}
	hc := cfg.HTTPClient
	if hc == nil {
		hc = &http.Client{Timeout: defaultTimeout}
	}
	return &Tool{provider: p, name: cfg.Provider, key: cfg.APIKey, endpoint: u.JoinPath("search").String(), hc: hc}, nil
}

// Provider names the provider, which prices the queries.
func (t *Tool) Provider() string { return t.name }

// Spec describes the tool to the model.
func (t *Tool) Spec() llm.ToolSpec { return spec }

// spec depends on no configuration: one for every Tool. Its Parameters
// are shared and must only be read.
var spec = llm.ToolSpec{
	Name:        Name,
	Description: "Search the web. Returns titles, URLs and short snippets.",
	Parameters:  tools.QueryParameters(maxQuery, defaultMaxResults, maxMaxResults),
}

// Call runs one query. Once the request is sent it counts as a query for
// pricing, whatever the answer: a provider may bill a query it then
// fails, and a turn is never priced below what it cost.
func (t *Tool) Call(ctx context.Context, _ tools.Env, args json.RawMessage) tools.Result {
	query, n, err := tools.DecodeQuery(args, maxQuery, defaultMaxResults, maxMaxResults)
	if err != nil {
		return tools.Result{Err: err}
	}

	req := httpwire.Request{
		Method: http.MethodPost, URL: t.endpoint, Body: t.provider.body(query, n),
		OK: httpwire.Status(http.StatusOK), MaxBytes: maxResponse,
	}
	t.provider.authorize(&req, t.key)
	var hits []result
	req.Decode = func(body io.Reader) (err error) {
		hits, err = t.provider.results(body)
		return err
	}
	_, err = httpwire.Do(ctx, t.hc, req)
	if e, ok := errors.AsType[*httpwire.Error](err); ok && e.Kind == httpwire.KindRequest {
		return tools.Result{Err: e.WithMessage("search: building the request failed")}
	}
	res := tools.Result{Usage: tools.Usage{SearchQueries: 1}}
	if err != nil {
		res.Err = failure(err)
		return res
	}
	res.Output = t.present(hits, n)
	return res
}

// failure puts a failed query in words the model can use; the error
// keeps the status and the cause for the log.
func failure(err error) error {
	e, ok := errors.AsType[*httpwire.Error](err)
	if !ok {
		return err
	}
	switch s := e.Status; {
	case e.Kind == httpwire.KindContext:
		return fmt.Errorf("web search: %w", e.Err)
	case e.Kind == httpwire.KindTransport:
		return e.WithMessage("web search: provider unreachable")
	case e.Kind == httpwire.KindDecode:
		return e.WithMessage("web search: malformed answer from the provider")
	case s == http.StatusUnauthorized || s == http.StatusForbidden:
		return e.WithMessage(fmt.Sprintf("web search: provider refused the credentials (status %d)", s))
	case s == http.StatusTooManyRequests:
		return e.WithMessage(fmt.Sprintf("web search: rate limited, try again later (status %d)", s))
	case s >= 500:
		return e.WithMessage(fmt.Sprintf("web search: provider unavailable (status %d)", s))
	}
	return e.WithMessage(fmt.Sprintf("web search: provider rejected the query (status %d)", e.Status))
}

// present trims the hits for the model: at most n, each field bounded,
// links only over http(s), and the API key scrubbed should a provider
// ever echo it.
func (t *Tool) present(hits []result, n int) map[string]any {
	out := []result{}
	for _, h := range hits {
		if len(out) == n {
			break
		}
		u, err := url.Parse(h.URL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || len(h.URL) > maxURL || strings.Contains(h.URL, t.key) {
			continue
		}
		out = append(out, result{
			Title:   clip(t.scrub(h.Title), maxTitle),
			URL:     h.URL,
			Snippet: clip(t.scrub(strings.Join(strings.Fields(h.Snippet), " ")), maxSnippet),
		})
	}
	m := map[string]any{"results": out}
	if len(out) == 0 {
		m["note"] = "no results"
	}
	return m
}

func (t *Tool) scrub(s string) string { return redact.Scrub(s, t.key) }
