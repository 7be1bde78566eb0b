package e2b

import (
	"context"
	"fmt"
	"iter"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/commonly/runtime/shared/sandbox"
)

// Sandbox states of the v2 list.
const (
	StateRunning = "running"
	StatePaused  = "paused"
)

// ListQuery filters the v2 list. Zero fields are not sent.
type ListQuery struct {
	// Metadata pairs are ANDed.
	Metadata map[string]string
	// State is any of StateRunning, StatePaused.
	State []string
	// Order is "asc" or "desc" by start time (the API defaults to desc).
	Order        string
	StartedAfter time.Time
	Template     string
	// Limit is the page size, 1–100 (the API defaults to 100).
	Limit int
}

// Page is one page of the list.
type Page struct {
	Sandboxes []ListedSandbox
	// NextToken is the cursor of the next page; empty on the last one.
	NextToken string
	// TotalRunning is X-Total-Running, or -1 when the API did not send it.
	TotalRunning int
}

// maxPages stops a pagination loop that a misbehaving server never ends.
const maxPages = 10_000

// encode builds the query string. metadata is itself a query string
// (pairs escaped, then the whole escaped again as one value) and state is
// a bare comma list (form style, explode=false), so both are written by
// hand rather than by url.Values.
func (q ListQuery) encode(nextToken string) (string, error) {
	v := url.Values{}
	if len(q.Metadata) > 0 {
		inner := url.Values{}
		for k, val := range q.Metadata {
			inner.Set(k, val)
		}
		v.Set("metadata", inner.Encode())
	}
	if q.Order != "" {
		if q.Order != "asc" && q.Order != "desc" {
			return "", fmt.Errorf("order %q is not asc or desc", q.Order)
		}
		v.Set("order", q.Order)
	}
	if !q.StartedAfter.IsZero() {
		v.Set("startedAfter", q.StartedAfter.UTC().Format(time.RFC3339Nano))
	}
	if q.Template != "" {
		v.Set("template", q.Template)
	}
	if q.Limit != 0 {
		if q.Limit < 1 || q.Limit > 100 {
			return "", fmt.Errorf("limit %d is not within 1–100", q.Limit)
		}
		v.Set("limit", strconv.Itoa(q.Limit))
	}
	if nextToken != "" {
		v.Set("nextToken", nextToken)
	}
	s := v.Encode()
	if len(q.State) > 0 {
		for _, st := range q.State {
			if st != StateRunning && st != StatePaused {
				return "", fmt.Errorf("state %q is not running or paused", st)
			}
		}
		if s != "" {
			s += "&"
		}
		s += "state=" + strings.Join(q.State, ",")
	}
	return s, nil
}

// ListPage reads one page of the v2 list, starting at nextToken ("" for
// the first page).
func (c *Client) ListPage(ctx context.Context, q ListQuery, nextToken string) (Page, error) {
	qs, err := q.encode(nextToken)
	if err != nil {
		return Page{}, fmt.Errorf("e2b: list sandboxes: %w", err)
	}
	path := "/v2/sandboxes"
	if qs != "" {
		path += "?" + qs
	}
	var rows []ListedSandbox
	hdr, err := c.call(ctx, "list sandboxes", http.MethodGet, path, nil, &rows, http.StatusOK)
	if err != nil {
		return Page{}, err
	}
	p := Page{Sandboxes: rows, NextToken: hdr.Get("X-Next-Token"), TotalRunning: -1}
	if h := hdr.Get("X-Total-Running"); h != "" {
		n, err := strconv.Atoi(h)
		if err != nil {
			return Page{}, fmt.Errorf("e2b: list sandboxes: bad X-Total-Running %q", h)
		}
		p.TotalRunning = n
	}
	return p, nil
}

// Pages iterates over every page of the list, following X-Next-Token
// until it is absent: a reaper that reads only the first page misses
// sandboxes. Iteration stops at the first error, which is yielded.
func (c *Client) Pages(ctx context.Context, q ListQuery) iter.Seq2[Page, error] {
	return func(yield func(Page, error) bool) {
		token := ""
		seen := map[string]bool{}
		for range maxPages {
			p, err := c.ListPage(ctx, q, token)
			if err != nil {
				yield(Page{}, err)
				return
			}
			if !yield(p, nil) || p.NextToken == "" {
				return
			}
			if seen[p.NextToken] {
				yield(Page{}, fmt.Errorf("e2b: list sandboxes: next token %q repeats", p.NextToken))
				return
			}
			seen[p.NextToken] = true
			token = p.NextToken
		}
		yield(Page{}, fmt.Errorf("e2b: list sandboxes: more than %d pages", maxPages))
	}
}

// List returns the sandboxes of every page.
func (c *Client) List(ctx context.Context, q ListQuery) ([]ListedSandbox, error) {
	var all []ListedSandbox
	for p, err := range c.Pages(ctx, q) {
		if err != nil {
			return nil, err
		}
		all = append(all, p.Sandboxes...)
	}
	return all, nil
}

// listPage is E2B's largest page.
const listPage = 100

// The client is the reaper's view of E2B.
var _ sandbox.Inventory = (*Client)(nil)

// Provider names E2B as its records do (sandbox.Inventory).
func (c *Client) Provider() string { return ProviderName }

// ListSandboxes yields stage's sandboxes, running or paused, oldest
// first, a page at a time (sandbox.Inventory): E2B filters by the
// metadata every sandbox of ours carries (Owner), and each row still says
// whose it is, so a list that ignored the filter finds nothing of
// another stage's killed.
func (c *Client) ListSandboxes(ctx context.Context, stage string) iter.Seq2[[]sandbox.Listed, error] {
	q := ListQuery{Metadata: Owner(stage), State: []string{StateRunning, StatePaused}, Order: "asc", Limit: listPage}
	return func(yield func([]sandbox.Listed, error) bool) {
		for p, err := range c.Pages(ctx, q) {
			if err != nil {
				yield(nil, err)
				return
			}
			page := make([]sandbox.Listed, len(p.Sandboxes))
			for i, sb := range p.Sandboxes {
				page[i] = listed(sb)
			}
			if !yield(page, nil) {
				return
			}
		}
	}
}

// listed is a listed sandbox as the runtime reads it: its stage only if
// it carries our app's tag (Stage "" is none of this runtime's).
func listed(sb ListedSandbox) sandbox.Listed {
	l := sandbox.Listed{ID: sb.SandboxID, RunID: sb.Metadata[MetaRunID], StartedAt: sb.StartedAt}
	if sb.Metadata[MetaApp] == AppName {
		l.Stage = sb.Metadata[MetaStage]
	}
	return l
}
