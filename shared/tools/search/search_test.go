package search_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/commonly/runtime/shared/httpwire"
	"github.com/commonly/runtime/shared/tools"
	"github.com/commonly/runtime/shared/tools/search"
	"github.com/commonly/runtime/shared/tools/search/searchtest"
)

const key = "sk-search-4f1c9e2b7a"

var env = tools.Env{RunID: "r1", UserID: "u1", PodID: "p1", AgentName: "helper"}

type fixture struct {
	provider string
	fake     *searchtest.Server
	tool     *search.Tool
}

// both runs f against a fake of each provider.
func both(t *testing.T, f func(t *testing.T, fx fixture)) {
	for _, p := range []string{search.ProviderExa, search.ProviderTavily} {
		t.Run(p, func(t *testing.T) {
			fake := searchtest.NewExa(t, key)
			if p == search.ProviderTavily {
				fake = searchtest.NewTavily(t, key)
			}
			tool, err := search.New(search.Config{Provider: p, APIKey: key, BaseURL: fake.URL + "/"})
			if err != nil {
				t.Fatal(err)
			}
			f(t, fixture{p, fake, tool})
		})
	}
}

func call(fx fixture, args string) tools.Result {
	return fx.tool.Call(context.Background(), env, json.RawMessage(args))
}

type hit struct {
	Title, URL, Snippet string
}

func hits(t *testing.T, res tools.Result) []hit {
	t.Helper()
	if res.Err != nil {
		t.Fatalf("tool error: %v", res.Err)
	}
	b, _ := json.Marshal(res.Output)
	var out struct{ Results []hit }
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return out.Results
}

func many(n int) []searchtest.Hit {
	var h []searchtest.Hit
	for i := range n {
		h = append(h, searchtest.Hit{Title: fmt.Sprintf("Result %d", i), URL: fmt.Sprintf("https://example.com/%d", i), Text: fmt.Sprintf("snippet %d", i)})
	}
	return h
}

func TestNewValidatesConfig(t *testing.T) {
	cases := []search.Config{
		{Provider: "bing", APIKey: key},
		{Provider: "", APIKey: key},
		{Provider: "exa", APIKey: " "},
		{Provider: "exa", APIKey: key, BaseURL: "ftp://x"},
	}
	for _, c := range cases {
		if _, err := search.New(c); err == nil {
			t.Errorf("New(%+v) succeeded", c)
		} else if strings.Contains(err.Error(), key) {
			t.Errorf("error quotes the key: %v", err)
		}
	}
	tool, err := search.New(search.Config{Provider: "tavily", APIKey: key})
	if err != nil || tool.Provider() != "tavily" || tool.Spec().Name != search.Name {
		t.Errorf("from env: %v, %v", tool, err)
	}
}

func TestSearch(t *testing.T) {
	both(t, func(t *testing.T, fx fixture) {
		fx.fake.SetHits(many(12)...)
		res := call(fx, `{"query": "  go generics  "}`)
		got := hits(t, res)
		if len(got) != 5 || got[0] != (hit{"Result 0", "https://example.com/0", "snippet 0"}) {
			t.Errorf("default search = %+v", got)
		}
		if res.Usage.SearchQueries != 1 || res.Posted || res.Fatal != nil {
			t.Errorf("result = %+v", res)
		}
		if got := hits(t, call(fx, `{"query": "go", "maxResults": 10}`)); len(got) != 10 {
			t.Errorf("maxResults 10 gave %d", len(got))
		}
		calls := fx.fake.Calls()
		if len(calls) != 2 || calls[0].Query != "go generics" || calls[0].MaxResults != 5 || calls[1].MaxResults != 10 || !calls[0].Authorized {
			t.Errorf("provider saw %+v", calls)
		}
		if fx.provider == search.ProviderExa && calls[0].MaxCharacters != 500 {
			t.Errorf("exa asked for %d characters of text", calls[0].MaxCharacters)
		}
		fx.fake.SetHits()
		res = call(fx, `{"query": "nothing"}`)
		if got := hits(t, res); len(got) != 0 || res.Output.(map[string]any)["note"] != "no results" {
			t.Errorf("empty search = %+v", res.Output)
		}
	})
}

func TestResultsAreTrimmed(t *testing.T) {
	both(t, func(t *testing.T, fx fixture) {
		fx.fake.SetHits(
			searchtest.Hit{Title: strings.Repeat("T", 400), URL: "https://example.com/long", Text: strings.Repeat("word\n\t ", 200)},
			searchtest.Hit{Title: "script", URL: "javascript:alert(1)", Text: "x"},
			searchtest.Hit{Title: "huge url", URL: "https://example.com/" + strings.Repeat("a", 3000), Text: "x"},
			searchtest.Hit{Title: "ok", URL: "http://example.org", Text: "fine"},
		)
		got := hits(t, call(fx, `{"query": "q"}`))
		if len(got) != 2 || got[1].URL != "http://example.org" {
			t.Fatalf("results = %+v, want the two http(s) links of sane length", got)
		}
		if n := utf8.RuneCountInString(got[0].Title); n != 300 {
			t.Errorf("title has %d characters, want 300", n)
		}
		if n := utf8.RuneCountInString(got[0].Snippet); n > 500 || strings.ContainsAny(got[0].Snippet, "\n\t") || !strings.HasPrefix(got[0].Snippet, "word word") {
			t.Errorf("snippet (%d characters) = %q", n, got[0].Snippet[:20])
		}
	})
}

func TestExaHighlightsStandInForText(t *testing.T) {
	fake := searchtest.NewExa(t, key)
	fake.SetHits(searchtest.Hit{Title: "t", URL: "https://example.com", Highlights: []string{"first part", "second part"}})
	tool, err := search.New(search.Config{Provider: "exa", APIKey: key, BaseURL: fake.URL})
	if err != nil {
		t.Fatal(err)
	}
	got := hits(t, tool.Call(context.Background(), env, json.RawMessage(`{"query": "q"}`)))
	if len(got) != 1 || got[0].Snippet != "first part … second part" {
		t.Errorf("results = %+v", got)
	}
}

func TestBadArguments(t *testing.T) {
	cases := []string{
		`{}`, `{"query": ""}`, `{"query": "  "}`, `{"query": 5}`,
		`{"query": "` + strings.Repeat("q", 1001) + `"}`,
		`{"query": "q", "maxResults": 0}`, `{"query": "q", "maxResults": 11}`,
		`{"query": "q", "maxResults": "5"}`, `{"query": "q", "num": 5}`,
	}
	both(t, func(t *testing.T, fx fixture) {
		for _, args := range cases {
			res := call(fx, args)
			if !errors.Is(res.Err, tools.ErrBadArguments) || res.Output != nil || res.Usage.SearchQueries != 0 {
				t.Errorf("%s: %+v, want a bad-arguments error and no query", args, res)
			}
		}
		if n := len(fx.fake.Calls()); n != 0 {
			t.Errorf("%d queries sent for bad arguments", n)
		}
	})
}

func TestProviderFailures(t *testing.T) {
	cases := []struct {
		status int
		want   string
	}{
		{http.StatusTooManyRequests, "rate limited"},
		{http.StatusInternalServerError, "unavailable (status 500)"},
		{http.StatusBadRequest, "rejected the query (status 400)"},
		{432, "rejected the query (status 432)"}, // Tavily's plan limit
		{http.StatusOK, "malformed answer"},
	}
	both(t, func(t *testing.T, fx fixture) {
		fx.fake.Echo(true)
		for _, c := range cases {
			fx.fake.Fail(c.status)
			res := call(fx, `{"query": "q"}`)
			if res.Err == nil || !strings.Contains(res.Err.Error(), c.want) || res.Output != nil || res.Fatal != nil {
				t.Errorf("status %d: %+v, want a tool error with %q", c.status, res, c.want)
			}
			if res.Usage.SearchQueries != 1 {
				t.Errorf("status %d: a sent query must be priced", c.status)
			}
			if e, ok := errors.AsType[*httpwire.Error](res.Err); !ok || e.Status != c.status {
				t.Errorf("status %d: the status is not kept for the log: %#v", c.status, res.Err)
			}
			assertNoKey(t, res)
		}
	})
}

func TestWrongKey(t *testing.T) {
	both(t, func(t *testing.T, fx fixture) {
		fx.fake.Echo(true)
		tool, err := search.New(search.Config{Provider: fx.provider, APIKey: "sk-wrong", BaseURL: fx.fake.URL})
		if err != nil {
			t.Fatal(err)
		}
		res := tool.Call(context.Background(), env, json.RawMessage(`{"query": "q"}`))
		if res.Err == nil || !strings.Contains(res.Err.Error(), "refused the credentials (status 401)") || strings.Contains(res.Err.Error(), "sk-wrong") {
			t.Errorf("wrong key: %+v", res)
		}
		assertNoKey(t, res)
	})
}

func TestEchoedKeyNeverReachesTheModel(t *testing.T) {
	both(t, func(t *testing.T, fx fixture) {
		fx.fake.Echo(true)
		fx.fake.SetHits(many(2)...)
		res := call(fx, `{"query": "q"}`)
		got := hits(t, res)
		if len(got) != 3 || got[2].Title != "key [redacted]" || got[2].Snippet != "the key is [redacted]" {
			t.Errorf("results = %+v, want the two real hits, the echo scrubbed and the leaking link dropped", got)
		}
		assertNoKey(t, res)
	})
}

func TestCancelledContext(t *testing.T) {
	both(t, func(t *testing.T, fx fixture) {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		res := fx.tool.Call(ctx, env, json.RawMessage(`{"query": "q"}`))
		if !errors.Is(res.Err, context.Canceled) {
			t.Errorf("err = %v, want context.Canceled", res.Err)
		}
	})
}

func assertNoKey(t *testing.T, res tools.Result) {
	t.Helper()
	b, _ := json.Marshal(res.Output)
	text := string(b)
	if res.Err != nil {
		text += res.Err.Error()
	}
	if strings.Contains(text, key) {
		t.Errorf("result leaks the API key: %s", text)
	}
}
