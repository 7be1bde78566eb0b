package search

import (
	"encoding/json"
	"io"
	"net/http"

	"github.com/commonly/runtime/shared/httpwire"
	"strings"
)

// exa speaks Exa's /search with text contents.
type exa struct{}

type exaRequest struct {
	Query      string      `json:"query"`
	NumResults int         `json:"numResults"`
	Contents   exaContents `json:"contents"`
}

type exaContents struct {
	Text exaText `json:"text"`
}

type exaText struct {
	MaxCharacters int `json:"maxCharacters"`
}

func (exa) body(query string, n int) any {
	return exaRequest{Query: query, NumResults: n, Contents: exaContents{Text: exaText{MaxCharacters: maxSnippet}}}
}

func (exa) authorize(r *httpwire.Request, key string) {
	r.Header = http.Header{"X-Api-Key": {key}}
}

func (exa) results(body io.Reader) ([]result, error) {
	var a struct {
		Results []struct {
			Title      string   `json:"title"`
			URL        string   `json:"url"`
			Text       string   `json:"text"`
			Highlights []string `json:"highlights"`
		} `json:"results"`
	}
	if err := json.NewDecoder(body).Decode(&a); err != nil {
		return nil, err
	}
	out := make([]result, 0, len(a.Results))
	for _, r := range a.Results {
		snippet := r.Text
		if strings.TrimSpace(snippet) == "" {
			snippet = strings.Join(r.Highlights, " … ")
		}
		out = append(out, result{Title: r.Title, URL: r.URL, Snippet: snippet})
	}
	return out, nil
}
