package pod

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/commonly/runtime/shared/llm"
	"github.com/commonly/runtime/shared/textcap"
	"github.com/commonly/runtime/shared/tools"
)

// Bounds on what the model sends and what it is shown. Reads are capped
// so that a busy pod cannot flood the context; writes so that the model
// cannot flood the pod.
const (
	maxMessageRead   = 600
	maxContextRead   = 8000
	maxMemoryRead    = 8000
	maxMessageWrite  = 4000
	maxMemoryWrite   = 2000
	maxTitle         = 200
	maxAssignee      = 100
	maxNotes         = 4000
	maxAuthor        = 100
	defaultReadCount = 20
	maxReadCount     = 50
)

// contentSpec is the spec of a tool whose one argument is a text "content",
// built once per tool at package initialisation.
func contentSpec(name, description, field string, max int) llm.ToolSpec {
	return llm.ToolSpec{
		Name:        name,
		Description: description,
		Parameters: map[string]any{
			"type": "object",
			"properties": map[string]any{
				"content": map[string]any{"type": "string", "minLength": 1, "maxLength": max, "description": field},
			},
			"required":             []string{"content"},
			"additionalProperties": false,
		},
	}
}

// decodeContent reads {"content"} strictly: present, not blank, at most
// max characters.
func decodeContent(args json.RawMessage, max int) (string, error) {
	var a struct {
		Content *string `json:"content"`
	}
	if err := tools.DecodeArgs(args, &a); err != nil {
		return "", err
	}
	if a.Content == nil || strings.TrimSpace(*a.Content) == "" {
		return "", fmt.Errorf("%w: content is required", tools.ErrBadArguments)
	}
	if textcap.Len(*a.Content) > max {
		return "", fmt.Errorf("%w: content is longer than %d characters", tools.ErrBadArguments, max)
	}
	return *a.Content, nil
}
