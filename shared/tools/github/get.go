package github

import (
	"context"
	"encoding/json"
	"strconv"

	"github.com/commonly/runtime/shared/llm"
	"github.com/commonly/runtime/shared/tools"
)

// GitHub's rules for account and repository names; checking them keeps
// the model's words out of the path's structure. Plain loops rather than
// package-level regexps: those compiled at every cold start (0.4 ms, 1,800
// allocations for the bounded repetitions).

// validOwner is ^[A-Za-z0-9][A-Za-z0-9-]{0,38}$.
func validOwner(s string) bool {
	if len(s) == 0 || len(s) > 39 || s[0] == '-' {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !alnum(s[i]) && s[i] != '-' {
			return false
		}
	}
	return true
}

// validRepo is ^[A-Za-z0-9._-]{1,100}$.
func validRepo(s string) bool {
	if len(s) == 0 || len(s) > 100 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !alnum(s[i]) && s[i] != '.' && s[i] != '_' && s[i] != '-' {
			return false
		}
	}
	return true
}

func alnum(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

// getIssue is github_get_issue.
type getIssue struct{ c *Client }

func (getIssue) Spec() llm.ToolSpec { return getIssueSpec }

var getIssueSpec = llm.ToolSpec{
	Name:        NameGetIssue,
	Description: "Read one GitHub issue or pull request: title, state, body, labels, comment count and link.",
	Parameters: map[string]any{
		"type": "object",
		"properties": map[string]any{
			"owner":  map[string]any{"type": "string", "description": "Account that owns the repository."},
			"repo":   map[string]any{"type": "string", "description": "Repository name."},
			"number": map[string]any{"type": "integer", "minimum": 1},
		},
		"required":             []string{"owner", "repo", "number"},
		"additionalProperties": false,
	},
}

func (t getIssue) Call(ctx context.Context, env tools.Env, args json.RawMessage) tools.Result {
	var a struct {
		Owner  *string `json:"owner"`
		Repo   *string `json:"repo"`
		Number *int64  `json:"number"`
	}
	if err := tools.DecodeArgs(args, &a); err != nil {
		return tools.Result{Err: err}
	}
	switch {
	case a.Owner == nil || !validOwner(*a.Owner):
		return tools.Errorf("%w: owner must be a GitHub account name", tools.ErrBadArguments)
	case a.Repo == nil || !validRepo(*a.Repo) || *a.Repo == "." || *a.Repo == "..":
		return tools.Errorf("%w: repo must be a GitHub repository name", tools.ErrBadArguments)
	case a.Number == nil || *a.Number < 1 || *a.Number > 1<<31-1:
		return tools.Errorf("%w: number must be a positive issue number", tools.ErrBadArguments)
	}
	var answer apiIssue
	token, err := t.c.get(ctx, env, []string{"repos", *a.Owner, *a.Repo, "issues", strconv.FormatInt(*a.Number, 10)}, nil, &answer)
	if err != nil {
		return tools.Result{Err: err}
	}
	out := present(answer, token, true)
	if out.Repo == "" {
		out.Repo = *a.Owner + "/" + *a.Repo
	}
	return tools.Result{Output: out}
}
