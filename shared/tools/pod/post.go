package pod

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/commonly/runtime/shared/llm"
	"github.com/commonly/runtime/shared/redact"
	"github.com/commonly/runtime/shared/textcap"
	"github.com/commonly/runtime/shared/tools"
)

// postMessage is commonly_post_message.
type postMessage struct{ c *Client }

func (postMessage) Spec() llm.ToolSpec { return postMessageSpec }

var postMessageSpec = contentSpec(NamePostMessage, "Post a message to the pod as this agent. Once you have posted, your final answer is not posted again.", "The message text.", maxMessageWrite)

// Effectful implements tools.Effectful: the call acts on the pod.
func (postMessage) Effectful() {}

func (t postMessage) Call(ctx context.Context, env tools.Env, args json.RawMessage) tools.Result {
	content, err := decodeContent(args, maxMessageWrite)
	if err != nil {
		return tools.Result{Err: err}
	}
	id, token, err := t.c.post(ctx, env, content)
	if err != nil {
		return tools.Result{Err: err}
	}
	return tools.Result{Output: map[string]any{"messageId": redact.Scrub(id, token)}, Posted: true}
}

// Post posts content to env's pod as env's agent: the loop's delivery of
// the final answer. Long answers are cut to the pod's message bound
// rather than lost.
func (c *Client) Post(ctx context.Context, env tools.Env, content string) error {
	if strings.TrimSpace(content) == "" {
		return errors.New("pod: nothing to post")
	}
	content, _ = textcap.Head(content, maxMessageWrite)
	if _, _, err := c.post(ctx, env, content); err != nil {
		return fmt.Errorf("pod: posting the answer: %w", err)
	}
	return nil
}

// post sends a message and returns its id.
func (c *Client) post(ctx context.Context, env tools.Env, content string) (id, token string, err error) {
	if env.AgentName == "" {
		return "", "", errors.New("pod: the turn has no agent name")
	}
	body := map[string]string{"content": content, "agentName": env.AgentName}
	var answer struct {
		ID string `json:"id"`
	}
	token, err = c.call(ctx, env, http.MethodPost, []string{"api", "v1", "pods", env.PodID, "messages"}, nil, body, &answer)
	if malformed(err) {
		// A 2xx with a body we cannot read: the message is in the pod, and
		// reporting a failure would make the model post it again.
		return "", token, nil
	}
	return answer.ID, token, err
}
