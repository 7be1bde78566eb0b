package tools

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/commonly/runtime/shared/textcap"
)

// QueryParameters is the JSON Schema of the arguments DecodeQuery reads
// with the same bounds, for a search tool's spec. Each call builds a new
// map: build it once per tool.
func QueryParameters(maxChars, defaultResults, maxResults int) map[string]any {
	return map[string]any{
		"type": "object",
		"properties": map[string]any{
			"query":      map[string]any{"type": "string", "minLength": 1, "maxLength": maxChars},
			"maxResults": map[string]any{"type": "integer", "minimum": 1, "maximum": maxResults, "description": fmt.Sprintf("Default %d.", defaultResults)},
		},
		"required":             []string{"query"},
		"additionalProperties": false,
	}
}

// DecodeQuery reads the {"query", "maxResults"?} arguments of the search
// tools strictly: a non-blank query of at most maxChars characters
// (trimmed), and a result count from 1 to maxResults (defResults when
// absent).
func DecodeQuery(args json.RawMessage, maxChars, defResults, maxResults int) (string, int, error) {
	var a struct {
		Query      *string `json:"query"`
		MaxResults *int    `json:"maxResults"`
	}
	if err := DecodeArgs(args, &a); err != nil {
		return "", 0, err
	}
	if a.Query == nil || strings.TrimSpace(*a.Query) == "" {
		return "", 0, fmt.Errorf("%w: query is required", ErrBadArguments)
	}
	query := strings.TrimSpace(*a.Query)
	if textcap.Len(query) > maxChars {
		return "", 0, fmt.Errorf("%w: query is longer than %d characters", ErrBadArguments, maxChars)
	}
	n := defResults
	if a.MaxResults != nil {
		n = *a.MaxResults
	}
	if n < 1 || n > maxResults {
		return "", 0, fmt.Errorf("%w: maxResults must be between 1 and %d", ErrBadArguments, maxResults)
	}
	return query, n, nil
}
