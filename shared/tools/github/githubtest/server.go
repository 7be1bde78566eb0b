// Package githubtest is a fake of the GitHub REST API endpoints package
// github uses: issue search and issue read. It answers in GitHub's shapes,
// records every call with whether its headers were right, and accepts only
// the bearer tokens its accept function approves (typically
// brokertest.Server.Accepts("github")).
package githubtest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// Issue is an issue or pull request the fake holds.
type Issue struct {
	Owner, Repo string
	Number      int
	Title       string
	State       string // open or closed
	Body        string
	Labels      []string
	Comments    int
	Author      string
	PullRequest bool
}

// Call is one request received.
type Call struct {
	Method, Path string
	Query        string
	Authorized   bool
	// Headers is true when Accept and X-GitHub-Api-Version were as GitHub
	// documents them.
	Headers bool
}

// Server is a running fake.
type Server struct {
	URL string

	accept func(string) bool
	mu     sync.Mutex
	issues []Issue
	calls  []Call
	status int
	echo   bool
}

// New starts a fake GitHub, closed when the test ends.
func New(t testing.TB, accept func(token string) bool) *Server {
	s := &Server{accept: accept}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /search/issues", s.search)
	mux.HandleFunc("GET /repos/{owner}/{repo}/issues/{number}", s.get)
	srv := httptest.NewServer(s.guard(mux))
	s.URL = srv.URL
	t.Cleanup(srv.Close)
	return s
}

// AddIssue stores an issue.
func (s *Server) AddIssue(i Issue) { s.mu.Lock(); s.issues = append(s.issues, i); s.mu.Unlock() }

// Fail makes every authorized request answer status (0 restores). A
// forced 200 answers a body that is not JSON; a forced 403 is a rate
// limit (X-RateLimit-Remaining: 0).
func (s *Server) Fail(status int) { s.mu.Lock(); s.status = status; s.mu.Unlock() }

// Echo makes the fake reflect the caller's bearer token into answers and
// error bodies, to test that the tools never pass it on.
func (s *Server) Echo(on bool) { s.mu.Lock(); s.echo = on; s.mu.Unlock() }

// Calls returns the requests received.
func (s *Server) Calls() []Call {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Call(nil), s.calls...)
}

func (s *Server) guard(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		token, _ := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		ok := token != "" && s.accept(token)
		version := r.Header.Get("X-GitHub-Api-Version")
		headers := r.Header.Get("Accept") == "application/vnd.github+json" && version == "2022-11-28"
		s.mu.Lock()
		s.calls = append(s.calls, Call{Method: r.Method, Path: r.URL.EscapedPath(), Query: r.URL.RawQuery, Authorized: ok, Headers: headers})
		status, echo := s.status, s.echo
		s.mu.Unlock()
		leak := ""
		if echo {
			leak = token
		}
		switch {
		case !ok:
			problem(w, http.StatusUnauthorized, "Bad credentials "+leak)
		case version != "" && version != "2022-11-28":
			problem(w, http.StatusBadRequest, "Unsupported API version")
		case status == http.StatusOK:
			w.WriteHeader(http.StatusOK)
			_, _ = fmt.Fprintf(w, "<html>%s</html>", leak)
		case status == http.StatusForbidden:
			w.Header().Set("X-RateLimit-Remaining", "0")
			problem(w, status, "API rate limit exceeded "+leak)
		case status != 0:
			problem(w, status, "forced failure "+leak)
		default:
			next.ServeHTTP(w, r)
		}
	})
}

func (s *Server) leak(r *http.Request) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.echo {
		return ""
	}
	token, _ := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	return token
}

// search supports free words (all must appear in the title or body) and
// the qualifiers repo:, is:open, is:closed, is:issue and is:pr.
func (s *Server) search(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query().Get("q")
	perPage := 30
	if p := r.URL.Query().Get("per_page"); p != "" {
		n, err := strconv.Atoi(p)
		if err != nil || n < 1 || n > 100 {
			problem(w, http.StatusUnprocessableEntity, "per_page must be 1..100")
			return
		}
		perPage = n
	}
	if strings.TrimSpace(q) == "" || len(q) > 256 {
		problem(w, http.StatusUnprocessableEntity, "Validation Failed")
		return
	}
	var matches []Issue
	s.mu.Lock()
	for _, i := range s.issues {
		if matchesQuery(i, q) {
			matches = append(matches, i)
		}
	}
	s.mu.Unlock()
	items := []map[string]any{}
	for _, i := range matches {
		if len(items) == perPage {
			break
		}
		items = append(items, s.render(r, i))
	}
	writeJSON(w, http.StatusOK, map[string]any{"total_count": len(matches), "incomplete_results": false, "items": items})
}

func matchesQuery(i Issue, q string) bool {
	text := strings.ToLower(i.Title + " " + i.Body)
	for _, term := range strings.Fields(q) {
		switch {
		case strings.HasPrefix(term, "repo:"):
			if !strings.EqualFold(term[len("repo:"):], i.Owner+"/"+i.Repo) {
				return false
			}
		case term == "is:open" || term == "is:closed":
			if i.State != term[len("is:"):] {
				return false
			}
		case term == "is:issue" || term == "is:pr":
			if i.PullRequest != (term == "is:pr") {
				return false
			}
		default:
			if !strings.Contains(text, strings.ToLower(term)) {
				return false
			}
		}
	}
	return true
}

func (s *Server) get(w http.ResponseWriter, r *http.Request) {
	owner, repo := r.PathValue("owner"), r.PathValue("repo")
	number, err := strconv.Atoi(r.PathValue("number"))
	if err != nil {
		problem(w, http.StatusNotFound, "Not Found")
		return
	}
	s.mu.Lock()
	var found *Issue
	for k := range s.issues {
		if i := &s.issues[k]; strings.EqualFold(i.Owner, owner) && strings.EqualFold(i.Repo, repo) && i.Number == number {
			found = i
			break
		}
	}
	var issue Issue
	if found != nil {
		issue = *found
	}
	s.mu.Unlock()
	if found == nil {
		problem(w, http.StatusNotFound, "Not Found")
		return
	}
	writeJSON(w, http.StatusOK, s.render(r, issue))
}

// render writes an issue in GitHub's shape, with fields the client ignores.
func (s *Server) render(r *http.Request, i Issue) map[string]any {
	base := "http://" + r.Host
	repoURL := base + "/repos/" + i.Owner + "/" + i.Repo
	leak := s.leak(r)
	labels := []map[string]any{}
	for n, l := range i.Labels {
		labels = append(labels, map[string]any{"id": n + 1, "name": l, "color": "d73a4a", "default": false})
	}
	if leak != "" {
		labels = append(labels, map[string]any{"id": 99, "name": leak})
	}
	m := map[string]any{
		"url":            repoURL + "/issues/" + strconv.Itoa(i.Number),
		"repository_url": repoURL,
		"html_url":       "https://github.com/" + i.Owner + "/" + i.Repo + "/issues/" + strconv.Itoa(i.Number),
		"id":             1000 + i.Number,
		"node_id":        "I_kw" + strconv.Itoa(i.Number),
		"number":         i.Number,
		"title":          i.Title + leak,
		"state":          i.State,
		"locked":         false,
		"labels":         labels,
		"comments":       i.Comments,
		"user":           map[string]any{"login": i.Author, "id": 7, "type": "User"},
		"created_at":     "2026-08-01T09:00:00Z",
		"updated_at":     "2026-08-02T09:00:00Z",
		"body":           i.Body + leak,
		"reactions":      map[string]any{"total_count": 0},
	}
	if i.PullRequest {
		m["pull_request"] = map[string]any{"url": repoURL + "/pulls/" + strconv.Itoa(i.Number)}
	}
	return m
}

func problem(w http.ResponseWriter, status int, msg string) {
	writeJSON(w, status, map[string]string{"message": msg, "documentation_url": "https://docs.github.com/rest"})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
