package pod

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"

	"github.com/commonly/runtime/shared/llm"
	"github.com/commonly/runtime/shared/redact"
	"github.com/commonly/runtime/shared/textcap"
	"github.com/commonly/runtime/shared/tools"
)

// readContext is commonly_read_context: the pod's recent messages.
type readContext struct{ c *Client }

func (readContext) Spec() llm.ToolSpec { return readContextSpec }

var readContextSpec = llm.ToolSpec{
	Name:        NameReadContext,
	Description: "Read the most recent messages of the pod, oldest first.",
	Parameters: map[string]any{
		"type": "object",
		"properties": map[string]any{
			"messageCount": map[string]any{
				"type": "integer", "minimum": 1, "maximum": maxReadCount,
				"description": fmt.Sprintf("How many recent messages to read (default %d).", defaultReadCount),
			},
		},
		"additionalProperties": false,
	},
}

type message struct {
	ID        string `json:"id"`
	Author    string `json:"author"`
	Content   string `json:"content"`
	CreatedAt string `json:"createdAt"`
}

// contextMessage is a message as the model sees it.
type contextMessage struct {
	ID        string `json:"id,omitempty"`
	Author    string `json:"author"`
	Content   string `json:"content"`
	CreatedAt string `json:"createdAt,omitempty"`
	Truncated bool   `json:"truncated,omitempty"`
}

type contextOutput struct {
	Messages []contextMessage `json:"messages"`
	Note     string           `json:"note,omitempty"`
}

func (t readContext) Call(ctx context.Context, env tools.Env, args json.RawMessage) tools.Result {
	var a struct {
		MessageCount *int `json:"messageCount"`
	}
	if err := tools.DecodeArgs(args, &a); err != nil {
		return tools.Result{Err: err}
	}
	count := defaultReadCount
	if a.MessageCount != nil {
		count = *a.MessageCount
	}
	if count < 1 || count > maxReadCount {
		return tools.Errorf("%w: messageCount must be between 1 and %d", tools.ErrBadArguments, maxReadCount)
	}
	var answer struct {
		Messages []message `json:"messages"`
	}
	q := url.Values{"limit": {strconv.Itoa(count)}}
	token, err := t.c.call(ctx, env, http.MethodGet, []string{"api", "v1", "pods", env.PodID, "messages"}, q, nil, &answer)
	if err != nil {
		return tools.Result{Err: err}
	}
	return tools.Result{Output: capContext(answer.Messages, count, token)}
}

// capContext keeps the most recent messages that fit: each cut to
// maxMessageRead characters, all of them to maxContextRead, dropping the
// oldest first since the latest exchange matters most to a reply.
func capContext(msgs []message, count int, token string) contextOutput {
	if len(msgs) > count {
		msgs = msgs[len(msgs)-count:]
	}
	out := contextOutput{Messages: []contextMessage{}}
	total := 0
	cut := false
	for i := len(msgs) - 1; i >= 0; i-- {
		m := msgs[i]
		content, truncated := textcap.Head(redact.Scrub(m.Content, token), maxMessageRead)
		author, _ := textcap.Head(redact.Scrub(m.Author, token), maxAuthor)
		if total+textcap.Len(content) > maxContextRead {
			break
		}
		total += textcap.Len(content)
		cut = cut || truncated
		out.Messages = append(out.Messages, contextMessage{
			ID: redact.Scrub(m.ID, token), Author: author, Content: content,
			CreatedAt: redact.Scrub(m.CreatedAt, token), Truncated: truncated,
		})
	}
	// Built newest first; the model reads a conversation oldest first.
	slices.Reverse(out.Messages)
	switch dropped := len(msgs) - len(out.Messages); {
	case dropped > 0:
		out.Note = fmt.Sprintf("%d older messages omitted and long messages cut to %d characters: the context is capped at %d characters", dropped, maxMessageRead, maxContextRead)
	case cut:
		out.Note = fmt.Sprintf("long messages cut to %d characters", maxMessageRead)
	}
	return out
}
