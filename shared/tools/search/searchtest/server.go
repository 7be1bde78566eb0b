// Package searchtest fakes the Exa and Tavily search APIs as package search
// speaks them: each fake checks the API key where its provider expects
// it, validates the request body, records every query and answers with
// configured results, in the provider's own response shape (with fields
// the client ignores, as the real APIs have).
package searchtest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// Hit is one configured search result.
type Hit struct {
	Title string
	URL   string
	// Text is Exa's text or Tavily's content.
	Text string
	// Highlights are Exa's highlights (Tavily ignores them).
	Highlights []string
}

// Call is one request received.
type Call struct {
	Query      string
	MaxResults int
	// MaxCharacters is Exa's contents.text.maxCharacters.
	MaxCharacters int
	Authorized    bool
}

// Server is a running fake provider.
type Server struct {
	URL string
	Key string

	provider string
	srv      *httptest.Server
	mu       sync.Mutex
	hits     []Hit
	calls    []Call
	status   int
	echo     bool
}

// NewExa starts a fake Exa accepting key in x-api-key.
func NewExa(t testing.TB, key string) *Server { return start(t, "exa", key) }

// NewTavily starts a fake Tavily accepting key as a bearer token.
func NewTavily(t testing.TB, key string) *Server { return start(t, "tavily", key) }

func start(t testing.TB, provider, key string) *Server {
	s := Serve(provider, key)
	t.Cleanup(s.Close)
	return s
}

// Serve starts a fake provider ("exa" or "tavily") accepting key, until
// Close: for a program (the benchmarks) rather than a test.
func Serve(provider, key string) *Server {
	s := &Server{Key: key, provider: provider}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /search", s.search)
	s.srv = httptest.NewServer(mux)
	s.URL = s.srv.URL
	return s
}

// Close stops the server.
func (s *Server) Close() { s.srv.Close() }

// SetHits sets the results every query answers.
func (s *Server) SetHits(h ...Hit) { s.mu.Lock(); s.hits = h; s.mu.Unlock() }

// Fail makes every query answer status (0 restores). A forced 200 answers
// a body that is not JSON.
func (s *Server) Fail(status int) { s.mu.Lock(); s.status = status; s.mu.Unlock() }

// Echo makes the fake reflect the API key into its answers and error
// bodies, to test that the tool never passes it on.
func (s *Server) Echo(on bool) { s.mu.Lock(); s.echo = on; s.mu.Unlock() }

// Calls returns the queries received.
func (s *Server) Calls() []Call {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Call(nil), s.calls...)
}

func (s *Server) authorized(r *http.Request) bool {
	if s.provider == "exa" {
		return r.Header.Get("x-api-key") == s.Key
	}
	return r.Header.Get("Authorization") == "Bearer "+s.Key
}

func (s *Server) search(w http.ResponseWriter, r *http.Request) {
	call, err := s.decode(r)
	call.Authorized = s.authorized(r)
	s.mu.Lock()
	s.calls = append(s.calls, call)
	hits, status, echo := append([]Hit(nil), s.hits...), s.status, s.echo
	s.mu.Unlock()

	leak := ""
	if echo {
		leak = s.Key
	}
	switch {
	case !call.Authorized:
		writeJSON(w, http.StatusUnauthorized, map[string]string{"error": "invalid API key " + leak})
		return
	case status == http.StatusOK:
		w.WriteHeader(http.StatusOK)
		_, _ = fmt.Fprintf(w, "<html>%s</html>", leak)
		return
	case status != 0:
		writeJSON(w, status, map[string]string{"error": "forced failure " + leak})
		return
	case err != nil:
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": err.Error()})
		return
	}
	if len(hits) > call.MaxResults {
		hits = hits[:call.MaxResults]
	}
	if echo {
		hits = append(hits,
			Hit{Title: "key " + leak, URL: "https://leak.example/", Text: "the key is " + leak},
			Hit{Title: "link", URL: "https://leak.example/?key=" + leak, Text: "x"})
	}
	if s.provider == "exa" {
		writeJSON(w, http.StatusOK, exaAnswer(hits, call.MaxCharacters))
		return
	}
	writeJSON(w, http.StatusOK, tavilyAnswer(call.Query, hits))
}

func (s *Server) decode(r *http.Request) (Call, error) {
	if !strings.HasPrefix(r.Header.Get("Content-Type"), "application/json") {
		return Call{}, fmt.Errorf("content type must be application/json")
	}
	dec := json.NewDecoder(r.Body)
	dec.DisallowUnknownFields()
	if s.provider == "exa" {
		var body struct {
			Query      string `json:"query"`
			NumResults int    `json:"numResults"`
			Contents   struct {
				Text struct {
					MaxCharacters int `json:"maxCharacters"`
				} `json:"text"`
			} `json:"contents"`
		}
		if err := dec.Decode(&body); err != nil {
			return Call{}, err
		}
		c := Call{Query: body.Query, MaxResults: body.NumResults, MaxCharacters: body.Contents.Text.MaxCharacters}
		if c.Query == "" || c.MaxResults < 1 || c.MaxResults > 100 || c.MaxCharacters < 1 {
			return c, fmt.Errorf("query, numResults (1..100) and contents.text.maxCharacters are required")
		}
		return c, nil
	}
	var body struct {
		Query      string `json:"query"`
		MaxResults int    `json:"max_results"`
	}
	if err := dec.Decode(&body); err != nil {
		return Call{}, err
	}
	c := Call{Query: body.Query, MaxResults: body.MaxResults}
	if c.Query == "" || c.MaxResults < 0 || c.MaxResults > 20 {
		return c, fmt.Errorf("query is required and max_results is 0..20")
	}
	if c.MaxResults == 0 {
		c.MaxResults = 5 // Tavily's default
	}
	return c, nil
}

func exaAnswer(hits []Hit, maxChars int) map[string]any {
	results := []map[string]any{}
	for i, h := range hits {
		text := h.Text
		if r := []rune(text); len(r) > maxChars {
			text = string(r[:maxChars])
		}
		results = append(results, map[string]any{
			"id": h.URL, "title": h.Title, "url": h.URL, "text": text, "highlights": h.Highlights,
			"publishedDate": "2026-08-01T00:00:00.000Z", "author": nil, "score": 1 - float64(i)/10,
		})
	}
	return map[string]any{"requestId": "req_1", "resolvedSearchType": "neural", "results": results, "costDollars": map[string]any{"total": 0.005}}
}

func tavilyAnswer(query string, hits []Hit) map[string]any {
	results := []map[string]any{}
	for i, h := range hits {
		results = append(results, map[string]any{"title": h.Title, "url": h.URL, "content": h.Text, "score": 1 - float64(i)/10, "raw_content": nil})
	}
	return map[string]any{"query": query, "answer": nil, "images": []any{}, "results": results, "response_time": 0.42}
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
