package github_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/commonly/runtime/shared/broker"
	"github.com/commonly/runtime/shared/broker/brokertest"
	"github.com/commonly/runtime/shared/httpwire"
	"github.com/commonly/runtime/shared/tools"
	"github.com/commonly/runtime/shared/tools/github"
	"github.com/commonly/runtime/shared/tools/github/githubtest"
)

var env = tools.Env{RunID: "r1", UserID: "u1", PodID: "p1", AgentName: "helper"}

type rig struct {
	broker *brokertest.Server
	gh     *githubtest.Server
	client *github.Client
	tools  map[string]tools.Tool
}

func newRig(t *testing.T) *rig {
	t.Helper()
	b := brokertest.New(t)
	b.SetConnection("u1", github.Connector, broker.StatusActive)
	gh := githubtest.New(t, b.Accepts(github.Audience))
	c, err := github.New(github.Config{BaseURL: gh.URL, Tokens: b.Client(t)})
	if err != nil {
		t.Fatal(err)
	}
	r := &rig{broker: b, gh: gh, client: c, tools: map[string]tools.Tool{}}
	for _, tool := range c.Tools() {
		r.tools[tool.Spec().Name] = tool
	}
	gh.AddIssue(githubtest.Issue{Owner: "acme", Repo: "app", Number: 1, Title: "Crash on start", State: "open", Body: "It crashes.", Labels: []string{"bug", "p1"}, Comments: 3, Author: "ana"})
	gh.AddIssue(githubtest.Issue{Owner: "acme", Repo: "app", Number: 2, Title: "Crash on exit", State: "closed", Body: "Fixed.", Author: "bob"})
	gh.AddIssue(githubtest.Issue{Owner: "acme", Repo: "app", Number: 3, Title: "Fix crash on start", State: "open", Body: "Patch.", Author: "ana", PullRequest: true})
	gh.AddIssue(githubtest.Issue{Owner: "other", Repo: "lib", Number: 7, Title: "Crash in parser", State: "open", Body: strings.Repeat("é", 5000), Author: "cy"})
	return r
}

func (r *rig) call(t *testing.T, name, args string) tools.Result {
	t.Helper()
	return r.tools[name].Call(context.Background(), env, json.RawMessage(args))
}

func decode[T any](t *testing.T, res tools.Result) T {
	t.Helper()
	if res.Err != nil {
		t.Fatalf("tool error: %v", res.Err)
	}
	b, err := json.Marshal(res.Output)
	if err != nil {
		t.Fatal(err)
	}
	var v T
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatal(err)
	}
	return v
}

type issue struct {
	Repo          string
	Number        int
	Title, State  string
	URL           string
	Labels        []string
	Comments      int
	Author        string
	IsPullRequest bool
	Body          *string
	BodyTruncated bool
}

type searchOut struct {
	TotalCount int
	Issues     []issue
}

func TestNewValidatesConfig(t *testing.T) {
	b := brokertest.New(t)
	if _, err := github.New(github.Config{BaseURL: "::", Tokens: b.Client(t)}); err == nil {
		t.Error("bad URL accepted")
	}
	if _, err := github.New(github.Config{}); err == nil {
		t.Error("missing token source accepted")
	}
	if _, err := github.New(github.Config{Tokens: b.Client(t)}); err != nil {
		t.Errorf("default URL: %v", err)
	}
}

func TestSearchIssues(t *testing.T) {
	r := newRig(t)
	out := decode[searchOut](t, r.call(t, github.NameSearchIssues, `{"query": "repo:acme/app is:open crash"}`))
	if out.TotalCount != 2 || len(out.Issues) != 2 {
		t.Fatalf("search = %+v", out)
	}
	got := out.Issues[0]
	if got.Repo != "acme/app" || got.Number != 1 || got.Title != "Crash on start" || got.State != "open" ||
		got.URL != "https://github.com/acme/app/issues/1" || strings.Join(got.Labels, ",") != "bug,p1" ||
		got.Comments != 3 || got.Author != "ana" || got.IsPullRequest || got.Body != nil {
		t.Errorf("first issue = %+v", got)
	}
	if !out.Issues[1].IsPullRequest {
		t.Errorf("PR not marked: %+v", out.Issues[1])
	}
	c := r.gh.Calls()[0]
	if c.Path != "/search/issues" || c.Query != "per_page=10&q=repo%3Aacme%2Fapp+is%3Aopen+crash" || !c.Authorized || !c.Headers {
		t.Errorf("GitHub saw %+v", c)
	}

	out = decode[searchOut](t, r.call(t, github.NameSearchIssues, `{"query": "crash", "maxResults": 2}`))
	if out.TotalCount != 4 || len(out.Issues) != 2 {
		t.Errorf("maxResults 2: total %d, %d issues", out.TotalCount, len(out.Issues))
	}
	out = decode[searchOut](t, r.call(t, github.NameSearchIssues, `{"query": "nothing matches"}`))
	if out.Issues == nil || len(out.Issues) != 0 {
		t.Errorf("empty search = %+v", out)
	}
}

func TestGetIssue(t *testing.T) {
	r := newRig(t)
	got := decode[issue](t, r.call(t, github.NameGetIssue, `{"owner": "acme", "repo": "app", "number": 1}`))
	if got.Title != "Crash on start" || got.Body == nil || *got.Body != "It crashes." || got.BodyTruncated || got.Comments != 3 || got.Repo != "acme/app" {
		t.Errorf("issue = %+v", got)
	}
	if c := r.gh.Calls()[0]; c.Path != "/repos/acme/app/issues/1" || !c.Headers || !c.Authorized {
		t.Errorf("GitHub saw %+v", c)
	}

	long := decode[issue](t, r.call(t, github.NameGetIssue, `{"owner": "other", "repo": "lib", "number": 7}`))
	if n := utf8.RuneCountInString(*long.Body); n != 4000 || !long.BodyTruncated {
		t.Errorf("5000-character body read as %d, truncated %v", n, long.BodyTruncated)
	}

	res := r.call(t, github.NameGetIssue, `{"owner": "acme", "repo": "app", "number": 99}`)
	if res.Err == nil || !strings.Contains(res.Err.Error(), "not found") || res.Fatal != nil {
		t.Errorf("missing issue: %+v", res)
	}
}

func TestBadArguments(t *testing.T) {
	cases := []struct{ tool, args string }{
		{github.NameSearchIssues, `{}`},
		{github.NameSearchIssues, `{"query": " "}`},
		{github.NameSearchIssues, `{"query": "` + strings.Repeat("q", 257) + `"}`},
		{github.NameSearchIssues, `{"query": "q", "maxResults": 0}`},
		{github.NameSearchIssues, `{"query": "q", "maxResults": 21}`},
		{github.NameSearchIssues, `{"query": "q", "maxResults": "3"}`},
		{github.NameSearchIssues, `{"query": "q", "sort": "created"}`},
		{github.NameGetIssue, `{"repo": "app", "number": 1}`},
		{github.NameGetIssue, `{"owner": "acme/x", "repo": "app", "number": 1}`},
		{github.NameGetIssue, `{"owner": "-acme", "repo": "app", "number": 1}`},
		{github.NameGetIssue, `{"owner": "acme", "repo": "..", "number": 1}`},
		{github.NameGetIssue, `{"owner": "acme", "repo": "a b", "number": 1}`},
		{github.NameGetIssue, `{"owner": "acme", "repo": "app"}`},
		{github.NameGetIssue, `{"owner": "acme", "repo": "app", "number": 0}`},
		{github.NameGetIssue, `{"owner": "acme", "repo": "app", "number": -3}`},
		{github.NameGetIssue, `{"owner": "acme", "repo": "app", "number": "1"}`},
		{github.NameGetIssue, `{"owner": "acme", "repo": "app", "number": 1.5}`},
		{github.NameGetIssue, `{"owner": "acme", "repo": "app", "number": 1, "comments": true}`},
	}
	for _, c := range cases {
		r := newRig(t)
		res := r.call(t, c.tool, c.args)
		if !errors.Is(res.Err, tools.ErrBadArguments) || res.Output != nil {
			t.Errorf("%s %s: %+v, want a bad-arguments error", c.tool, c.args, res)
		}
		if n := len(r.gh.Calls()) + len(r.broker.Calls()); n != 0 {
			t.Errorf("%s %s: %d calls for bad arguments", c.tool, c.args, n)
		}
	}
}

var valid = []struct{ tool, args string }{
	{github.NameSearchIssues, `{"query": "crash"}`},
	{github.NameGetIssue, `{"owner": "acme", "repo": "app", "number": 1}`},
}

func TestConnectionNotActive(t *testing.T) {
	for _, v := range valid {
		r := newRig(t)
		r.broker.SetConnection("u1", github.Connector, broker.StatusRevoked)
		res := r.call(t, v.tool, v.args)
		if res.Err == nil || !strings.Contains(res.Err.Error(), "connection is not active") || res.Fatal != nil {
			t.Errorf("%s: %+v", v.tool, res)
		}
		r.broker.FailTokens(http.StatusServiceUnavailable)
		res = r.call(t, v.tool, v.args)
		if res.Err == nil || !strings.Contains(res.Err.Error(), "could not obtain GitHub credentials") {
			t.Errorf("%s with the broker down: %+v", v.tool, res)
		}
		// The model gets the fixed words; the log gets the broker's cause.
		if ce, ok := errors.AsType[*tools.CallError](res.Err); !ok || !strings.Contains(ce.LogValue().String(), "status 503") {
			t.Errorf("%s with the broker down: the log would not say why: %#v", v.tool, res.Err)
		}
		if n := len(r.gh.Calls()); n != 0 {
			t.Errorf("%s reached GitHub without a token", v.tool)
		}
		assertNoSecret(t, r.broker, res)
	}
}

func TestUpstreamFailures(t *testing.T) {
	cases := []struct {
		status int
		want   string
	}{
		{http.StatusForbidden, "rate limited"},
		{http.StatusTooManyRequests, "rate limited"},
		{http.StatusNotFound, "not found"},
		{http.StatusGone, "disabled"},
		{http.StatusUnprocessableEntity, "rejected the query"},
		{http.StatusBadGateway, "unavailable (status 502)"},
		{http.StatusOK, "malformed"},
	}
	for _, c := range cases {
		for _, v := range valid {
			r := newRig(t)
			r.gh.Echo(true)
			r.gh.Fail(c.status)
			res := r.call(t, v.tool, v.args)
			if res.Err == nil || !strings.Contains(res.Err.Error(), c.want) || res.Output != nil || res.Fatal != nil {
				t.Errorf("%s on %d: %+v, want a tool error with %q", v.tool, c.status, res, c.want)
			}
			if e, ok := errors.AsType[*httpwire.Error](res.Err); !ok || e.Status != c.status {
				t.Errorf("%s on %d: the status is not kept for the log: %#v", v.tool, c.status, res.Err)
			}
			assertNoSecret(t, r.broker, res)
		}
	}
}

func TestTokenForAnotherAudienceIsRefused(t *testing.T) {
	// GitHub accepts only github tokens; a commonly token must not work.
	b := brokertest.New(t)
	gh := githubtest.New(t, b.Accepts(github.Audience))
	commonlyOnly := tokensFor{b.Client(t), "commonly"}
	c, err := github.New(github.Config{BaseURL: gh.URL, Tokens: commonlyOnly})
	if err != nil {
		t.Fatal(err)
	}
	res := c.Tools()[0].Call(context.Background(), env, json.RawMessage(`{"query": "x"}`))
	if res.Err == nil || !strings.Contains(res.Err.Error(), "rejected the credentials (status 401)") {
		t.Errorf("result = %+v", res)
	}
	if calls := gh.Calls(); len(calls) != 1 || calls[0].Authorized {
		t.Errorf("calls = %+v", calls)
	}
}

// tokensFor asks the broker for a fixed audience whatever is requested.
type tokensFor struct {
	b        *broker.Client
	audience string
}

func (t tokensFor) Token(ctx context.Context, userID, _ string) (string, error) {
	return t.b.Token(ctx, userID, t.audience)
}

func TestEchoedTokensAreScrubbed(t *testing.T) {
	r := newRig(t)
	r.gh.Echo(true)
	for _, v := range valid {
		res := r.call(t, v.tool, v.args)
		if res.Err != nil {
			t.Fatalf("%s: %v", v.tool, res.Err)
		}
		assertNoSecret(t, r.broker, res)
	}
	got := decode[issue](t, r.call(t, github.NameGetIssue, `{"owner": "acme", "repo": "app", "number": 1}`))
	if got.Title != "Crash on start[redacted]" || *got.Body != "It crashes.[redacted]" || got.Labels[len(got.Labels)-1] != "[redacted]" {
		t.Errorf("echo shown as %+v", got)
	}
}

func TestEveryCallFetchesItsOwnToken(t *testing.T) {
	r := newRig(t)
	for range 3 {
		for _, v := range valid {
			if res := r.call(t, v.tool, v.args); res.Err != nil {
				t.Fatal(res.Err)
			}
		}
	}
	issued := r.broker.Issued()
	seen := map[string]bool{}
	for _, i := range issued {
		if i.Audience != github.Audience || i.UserID != "u1" || seen[i.Token] {
			t.Errorf("issued %+v", i)
		}
		seen[i.Token] = true
	}
	if len(issued) != 6 {
		t.Errorf("%d tokens for 6 calls", len(issued))
	}
}

func assertNoSecret(t *testing.T, b *brokertest.Server, res tools.Result) {
	t.Helper()
	out, err := json.Marshal(res.Output)
	if err != nil {
		t.Fatal(err)
	}
	text := string(out)
	if res.Err != nil {
		text += res.Err.Error()
	}
	for _, s := range b.Secrets() {
		if strings.Contains(text, s) {
			t.Errorf("result leaks a credential: %s", text)
		}
	}
}
