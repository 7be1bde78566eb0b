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
