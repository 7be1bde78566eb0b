package search

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
)

// tavily speaks Tavily's /search.
type tavily struct{}

type tavilyRequest struct {
	Query      string `json:"query"`
	MaxResults int    `json:"max_results"`
}

func (tavily) request(ctx context.Context, endpoint, key, query string, n int) (*http.Request, error) {
	req, err := postJSON(ctx, endpoint, tavilyRequest{Query: query, MaxResults: n})
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+key)
	return req, nil
}

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
