package tools

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"testing"

	"github.com/commonly/runtime/shared/llm"
)

type namedTool string

func (n namedTool) Spec() llm.ToolSpec { return llm.ToolSpec{Name: string(n)} }
func (n namedTool) Call(context.Context, Env, json.RawMessage) Result {
	return Result{Output: string(n)}
}

// checker answers from a map of connector → active and records its calls.
type checker struct {
	active map[string]bool
	err    error
	calls  []string
}

func (c *checker) ConnectionActive(_ context.Context, userID, connector string) (bool, error) {
	c.calls = append(c.calls, userID+"/"+connector)
	return c.active[connector], c.err
}

func list(names ...string) *[]string { return &names }

func TestOffer(t *testing.T) {
	cat := Catalog{
		Builtins: []Tool{namedTool("commonly_read_context"), namedTool("commonly_post_message"), namedTool("commonly_web_search")},
		Connectors: map[string][]Tool{
			"github": {namedTool("github_search_issues"), namedTool("github_get_issue")},
			"linear": {namedTool("linear_find")},
		},
	}
	cases := []struct {
		name       string
		sel        Selection
		active     map[string]bool
		want       []string
		wantChecks []string
	}{
		{
			name: "no list offers every built-in",
			sel:  Selection{UserID: "u"},
			want: []string{"commonly_read_context", "commonly_post_message", "commonly_web_search"},
		},
		{
			name: "empty list offers nothing",
			sel:  Selection{UserID: "u", Tools: list(), Connectors: []string{"github"}},
			want: nil, active: map[string]bool{"github": true},
		},
		{
			name: "a list is exactly what is offered, in catalog order",
			sel:  Selection{UserID: "u", Tools: list("commonly_web_search", "commonly_read_context")},
			want: []string{"commonly_read_context", "commonly_web_search"},
		},
		{
			name:       "enabled and active connector, no list",
			sel:        Selection{UserID: "u", Connectors: []string{"github"}},
			active:     map[string]bool{"github": true},
			want:       []string{"commonly_read_context", "commonly_post_message", "commonly_web_search", "github_search_issues", "github_get_issue"},
			wantChecks: []string{"u/github"},
		},
		{
			name:       "enabled but inactive connector",
			sel:        Selection{UserID: "u", Connectors: []string{"github"}},
			active:     map[string]bool{"github": false},
			want:       []string{"commonly_read_context", "commonly_post_message", "commonly_web_search"},
			wantChecks: []string{"u/github"},
		},
		{
			name:   "listed connector tool without the connector enabled",
			sel:    Selection{UserID: "u", Tools: list("github_get_issue")},
			active: map[string]bool{"github": true},
			want:   nil,
		},
		{
			name:       "list narrows an active connector",
			sel:        Selection{UserID: "u", Tools: list("github_get_issue", "commonly_post_message"), Connectors: []string{"github"}},
			active:     map[string]bool{"github": true},
			want:       []string{"commonly_post_message", "github_get_issue"},
			wantChecks: []string{"u/github"},
		},
		{
			name:       "a connector the list excludes is not checked",
			sel:        Selection{UserID: "u", Tools: list("commonly_post_message"), Connectors: []string{"github", "linear"}},
			active:     map[string]bool{"github": true, "linear": true},
			want:       []string{"commonly_post_message"},
			wantChecks: nil,
		},
		{
			name:       "connectors in name order, each checked once",
			sel:        Selection{UserID: "u", Tools: list("linear_find", "github_search_issues"), Connectors: []string{"linear", "github", "linear"}},
			active:     map[string]bool{"github": true, "linear": true},
			want:       []string{"github_search_issues", "linear_find"},
			wantChecks: []string{"u/github", "u/linear"},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			chk := &checker{active: c.active}
			set, err := Offer(context.Background(), cat, c.sel, chk)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, s := range set.Specs() {
				got = append(got, s.Name)
			}
			if !slices.Equal(got, c.want) {
				t.Errorf("offered %v, want %v", got, c.want)
			}
			if !slices.Equal(chk.calls, c.wantChecks) {
				t.Errorf("checked %v, want %v", chk.calls, c.wantChecks)
			}
			// Dispatch finds exactly what was offered.
			for _, tool := range append(cat.Builtins, append(cat.Connectors["github"], cat.Connectors["linear"]...)...) {
				name := tool.Spec().Name
				_, found := set.Lookup(name)
				if offered := slices.Contains(c.want, name); found != offered {
					t.Errorf("Lookup(%q) = %v, offered %v", name, found, offered)
				}
			}
			if len(set.Tools()) != len(c.want) {
				t.Errorf("Tools() has %d, want %d", len(set.Tools()), len(c.want))
			}
		})
	}
}

func TestOfferErrors(t *testing.T) {
	cat := Catalog{
		Builtins:   []Tool{namedTool("a")},
		Connectors: map[string][]Tool{"github": {namedTool("g")}},
	}
	brokerDown := errors.New("broker down")
	cases := []struct {
		name  string
		cat   Catalog
		sel   Selection
		conns ConnectionChecker
		want  error
	}{
		{"unknown tool in the list", cat, Selection{Tools: list("a", "nope")}, &checker{}, ErrUnknownTool},
		{"unknown connector", cat, Selection{Connectors: []string{"jira"}}, &checker{}, ErrUnknownConnector},
		{"broker failure", cat, Selection{Connectors: []string{"github"}}, &checker{err: brokerDown}, brokerDown},
		{"broker failure is a check error", cat, Selection{Connectors: []string{"github"}}, &checker{err: brokerDown}, ErrConnectorCheck},
		{"no checker", cat, Selection{Connectors: []string{"github"}}, nil, ErrConnectorCheck},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			set, err := Offer(context.Background(), c.cat, c.sel, c.conns)
			if !errors.Is(err, c.want) || set != nil {
				t.Fatalf("Offer = %v, %v; want %v", set, err, c.want)
			}
		})
	}
	dup := Catalog{Builtins: []Tool{namedTool("a")}, Connectors: map[string][]Tool{"github": {namedTool("a")}}}
	if _, err := Offer(context.Background(), dup, Selection{}, &checker{}); err == nil {
		t.Error("a name in the catalog twice was accepted")
	}
	if _, err := Offer(context.Background(), Catalog{Builtins: []Tool{namedTool("")}}, Selection{}, &checker{}); err == nil {
		t.Error("a tool without a name was accepted")
	}
}

func TestNilSetOffersNothing(t *testing.T) {
	var s *Set
	if _, ok := s.Lookup("a"); ok || s.Specs() != nil || s.Tools() != nil {
		t.Error("nil Set offers something")
	}
}

// countedTool counts the calls of its Spec.
type countedTool struct {
	name  string
	specs *int
}

func (c countedTool) Spec() llm.ToolSpec {
	*c.specs++
	return llm.ToolSpec{Name: c.name, Parameters: map[string]any{"type": "object"}}
}
func (c countedTool) Call(context.Context, Env, json.RawMessage) Result { return Result{} }

// Each tool's spec is read once per Offer, however often Specs is asked,
// and the slice Specs returns is the caller's.
func TestOfferReadsEachSpecOnce(t *testing.T) {
	n := 0
	cat := Catalog{
		Builtins:   []Tool{countedTool{"a", &n}, countedTool{"b", &n}},
		Connectors: map[string][]Tool{"github": {countedTool{"g", &n}}, "linear": {countedTool{"l", &n}}},
	}
	set, err := Offer(context.Background(), cat, Selection{UserID: "u", Tools: list("a", "g"), Connectors: []string{"github"}}, &checker{active: map[string]bool{"github": true}})
	if err != nil {
		t.Fatal(err)
	}
	first := set.Specs()
	first[0].Name = "changed"
	var got []string
	for _, s := range set.Specs() {
		got = append(got, s.Name)
	}
	if !slices.Equal(got, []string{"a", "g"}) {
		t.Errorf("offered %v, want [a g]", got)
	}
	if n != 4 {
		t.Errorf("Spec called %d times for 4 tools", n)
	}
	if _, ok := set.Lookup("g"); !ok {
		t.Error("g not found")
	}
}

func TestEmptySetSpecsIsEmptyNotNil(t *testing.T) {
	set, err := Offer(context.Background(), Catalog{Builtins: []Tool{namedTool("a")}}, Selection{Tools: list()}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if s := set.Specs(); s == nil || len(s) != 0 {
		t.Errorf("Specs() = %#v, want an empty slice", s)
	}
}

func names(set *Set) []string {
	var got []string
	for _, s := range set.Specs() {
		got = append(got, s.Name)
	}
	return got
}

// Code execution is opt-in: a tool of OptIn is offered only to an install
// whose list names it; no list offers every built-in but not it.
func TestOptInToolsOnlyWhenListed(t *testing.T) {
	cat := Catalog{Builtins: []Tool{namedTool("read"), namedTool("post")}, OptIn: []Tool{namedTool("run_code")}}
	cases := []struct {
		name string
		sel  Selection
		want []string
	}{
		{"no list", Selection{}, []string{"read", "post"}},
		{"a list without it", Selection{Tools: list("post")}, []string{"post"}},
		{"an empty list", Selection{Tools: list()}, nil},
		{"a list with it", Selection{Tools: list("run_code", "read")}, []string{"read", "run_code"}},
		{"only it", Selection{Tools: list("run_code")}, []string{"run_code"}},
	}
	for _, c := range cases {
		set, err := Offer(context.Background(), cat, c.sel, nil)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if got := names(set); !slices.Equal(got, c.want) {
			t.Errorf("%s: offered %v, want %v", c.name, got, c.want)
		}
		if _, found := set.Lookup("run_code"); found != slices.Contains(c.want, "run_code") {
			t.Errorf("%s: Lookup(run_code) = %v", c.name, found)
		}
	}
}

// A tool the deployment knows but has not configured (web search without
// a key, a connector without a broker) is never offered; the Set says
// which the install would have been offered, and the turn goes on. A
// connector contributing only such tools is not checked.
func TestUnconfiguredToolsAreUnavailable(t *testing.T) {
	cat := Catalog{
		Builtins:   []Tool{namedTool("post"), Unconfigured("web_search")},
		OptIn:      []Tool{namedTool("run_code")},
		Connectors: map[string][]Tool{"github": {Unconfigured("gh_search"), Unconfigured("gh_get")}, "linear": {namedTool("linear_find")}},
	}
	cases := []struct {
		name        string
		sel         Selection
		offered     []string
		unavailable []string
		checks      []string
	}{
		{"no list", Selection{UserID: "u"}, []string{"post"}, []string{"web_search"}, nil},
		{"listed", Selection{UserID: "u", Tools: list("web_search", "post")}, []string{"post"}, []string{"web_search"}, nil},
		{"not listed", Selection{UserID: "u", Tools: list("post")}, []string{"post"}, nil, nil},
		{"its connector enabled", Selection{UserID: "u", Tools: list("gh_get", "run_code"), Connectors: []string{"github"}}, []string{"run_code"}, []string{"gh_get"}, nil},
		{"its connector not enabled", Selection{UserID: "u", Tools: list("gh_get")}, nil, nil, nil},
		{"beside a configured connector", Selection{UserID: "u", Connectors: []string{"linear", "github"}},
			[]string{"post", "linear_find"}, []string{"web_search", "gh_search", "gh_get"}, []string{"u/linear"}},
	}
	for _, c := range cases {
		chk := &checker{active: map[string]bool{"linear": true}}
		set, err := Offer(context.Background(), cat, c.sel, chk)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if got := names(set); !slices.Equal(got, c.offered) {
			t.Errorf("%s: offered %v, want %v", c.name, got, c.offered)
		}
		if got := set.Unavailable(); !slices.Equal(got, c.unavailable) {
			t.Errorf("%s: unavailable %v, want %v", c.name, got, c.unavailable)
		}
		if !slices.Equal(chk.calls, c.checks) {
			t.Errorf("%s: checked %v, want %v", c.name, chk.calls, c.checks)
		}
		if _, found := set.Lookup("web_search"); found {
			t.Errorf("%s: an unconfigured tool can be dispatched", c.name)
		}
	}
	if r := Unconfigured("web_search").Call(context.Background(), Env{}, nil); r.Err == nil {
		t.Error("an unconfigured tool's call succeeded")
	}
}

// The catalog's names are every name an install may list: built-in,
// opt-in, connector and unconfigured tools, sorted; and its connectors.
func TestCatalogNames(t *testing.T) {
	cat := Catalog{
		Builtins:   []Tool{namedTool("post"), Unconfigured("web_search")},
		OptIn:      []Tool{namedTool("run_code")},
		Connectors: map[string][]Tool{"github": {Unconfigured("gh_search")}, "linear": {namedTool("linear_find")}},
	}
	if got, want := cat.Names(), []string{"gh_search", "linear_find", "post", "run_code", "web_search"}; !slices.Equal(got, want) {
		t.Errorf("Names() = %v, want %v", got, want)
	}
	if got, want := cat.ConnectorNames(), []string{"github", "linear"}; !slices.Equal(got, want) {
		t.Errorf("ConnectorNames() = %v, want %v", got, want)
	}
}
