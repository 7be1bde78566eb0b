package github

import (
	"context"
	"encoding/json"
	"net/url"
	"strconv"

	"github.com/commonly/runtime/shared/llm"
	"github.com/commonly/runtime/shared/tools"
)

const (
	defaultSearchResults = 10
	maxSearchResults     = 20
	// maxQuery is GitHub's own limit on a search query.
	maxQuery = 256
)

// searchIssues is github_search_issues.
type searchIssues struct{ c *Client }

func (searchIssues) Spec() llm.ToolSpec { return searchIssuesSpec }

var searchIssuesSpec = llm.ToolSpec{
	Name:        NameSearchIssues,
	Description: "Search GitHub issues and pull requests visible to the user, with GitHub search syntax (e.g. \"repo:owner/name is:open label:bug crash\").",
	Parameters:  tools.QueryParameters(maxQuery, defaultSearchResults, maxSearchResults),
}

func (t searchIssues) Call(ctx context.Context, env tools.Env, args json.RawMessage) tools.Result {
	query, n, err := tools.DecodeQuery(args, maxQuery, defaultSearchResults, maxSearchResults)
	if err != nil {
		return tools.Result{Err: err}
	}

	var answer struct {
		TotalCount        int        `json:"total_count"`
		IncompleteResults bool       `json:"incomplete_results"`
		Items             []apiIssue `json:"items"`
	}
	q := url.Values{"q": {query}, "per_page": {strconv.Itoa(n)}}
	token, err := t.c.get(ctx, env, []string{"search", "issues"}, q, &answer)
	if err != nil {
		return tools.Result{Err: err}
	}
	issues := []issue{}
	for _, it := range answer.Items {
		if len(issues) == n {
			break
		}
		issues = append(issues, present(it, token, false))
	}
	out := map[string]any{"totalCount": answer.TotalCount, "issues": issues}
	if answer.IncompleteResults {
		out["note"] = "GitHub timed out part of the search: results may be incomplete"
	}
	return tools.Result{Output: out}
}
