package search

import (
	"encoding/json"
	"io"

	"github.com/commonly/runtime/shared/httpwire"
)

// tavily speaks Tavily's /search.
type tavily struct{}

type tavilyRequest struct {
	Query      string `json:"query"`
	MaxResults int    `json:"max_results"`
}

func (tavily) body(query string, n int) any {
	return tavilyRequest{Query: query, MaxResults: n}
}

func (tavily) authorize(r *httpwire.Request, key string) { r.Bearer = key }

func (tavily) results(body io.Reader) ([]result, error) {
	var a struct {
		Results []struct {
			Title   string `json:"title"`
			URL     string `json:"url"`
			Content string `json:"content"`
		} `json:"results"`
	}
	if err := json.NewDecoder(body).Decode(&a); err != nil {
		return nil, err
	}
	out := make([]result, 0, len(a.Results))
	for _, r := range a.Results {
		out = append(out, result{Title: r.Title, URL: r.URL, Snippet: r.Content})
	}
	return out, nil
}
