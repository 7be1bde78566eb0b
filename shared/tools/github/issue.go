package github

import (
	"strings"

	"github.com/commonly/runtime/shared/redact"
	"github.com/commonly/runtime/shared/textcap"
)

// Bounds on what the model is shown.
const (
	maxTitle  = 300
	maxBody   = 4000
	maxLabels = 20
	maxLabel  = 50
)

// apiIssue is the part of GitHub's issue object the tools read.
type apiIssue struct {
	Number        int    `json:"number"`
	Title         string `json:"title"`
	State         string `json:"state"`
	Body          string `json:"body"`
	HTMLURL       string `json:"html_url"`
	RepositoryURL string `json:"repository_url"`
	Labels        []struct {
		Name string `json:"name"`
	} `json:"labels"`
	Comments int `json:"comments"`
	User     struct {
		Login string `json:"login"`
	} `json:"user"`
	CreatedAt   string    `json:"created_at"`
	UpdatedAt   string    `json:"updated_at"`
	PullRequest *struct{} `json:"pull_request"`
}

// issue is an issue as the model sees it.
type issue struct {
	Repo          string   `json:"repo,omitempty"`
	Number        int      `json:"number"`
	Title         string   `json:"title"`
	State         string   `json:"state"`
	URL           string   `json:"url"`
	Labels        []string `json:"labels"`
	Comments      int      `json:"comments"`
	Author        string   `json:"author,omitempty"`
	IsPullRequest bool     `json:"isPullRequest,omitempty"`
	CreatedAt     string   `json:"createdAt,omitempty"`
	UpdatedAt     string   `json:"updatedAt,omitempty"`
	Body          *string  `json:"body,omitempty"`
	BodyTruncated bool     `json:"bodyTruncated,omitempty"`
}

// present shapes an API issue for the model, scrubbing the token should
// anything echo it. The body is included only when withBody is set.
func present(a apiIssue, token string, withBody bool) issue {
	s := func(v string, max int) string {
		v, _ = textcap.Head(redact.Scrub(v, token), max)
		return v
	}
	out := issue{
		Repo:          s(repoOf(a.RepositoryURL), 200),
		Number:        a.Number,
		Title:         s(a.Title, maxTitle),
		State:         s(a.State, 20),
		URL:           s(a.HTMLURL, 500),
		Labels:        []string{},
		Comments:      a.Comments,
		Author:        s(a.User.Login, 100),
		IsPullRequest: a.PullRequest != nil,
		CreatedAt:     s(a.CreatedAt, 40),
		UpdatedAt:     s(a.UpdatedAt, 40),
	}
	for i, l := range a.Labels {
		if i == maxLabels {
			break
		}
		out.Labels = append(out.Labels, s(l.Name, maxLabel))
	}
	if withBody {
		body, cut := textcap.Head(redact.Scrub(a.Body, token), maxBody)
		out.Body, out.BodyTruncated = &body, cut
	}
	return out
}

// repoOf turns ".../repos/owner/name" into "owner/name".
func repoOf(repositoryURL string) string {
	_, repo, ok := strings.Cut(repositoryURL, "/repos/")
	if !ok {
		return ""
	}
	return repo
}
