package pod

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"

	"github.com/commonly/runtime/shared/llm"
	"github.com/commonly/runtime/shared/redact"
	"github.com/commonly/runtime/shared/textcap"
	"github.com/commonly/runtime/shared/tools"
)

// createTask is commonly_create_task.
type createTask struct{ c *Client }

func (createTask) Spec() llm.ToolSpec { return createTaskSpec }

var createTaskSpec = llm.ToolSpec{
	Name:        NameCreateTask,
	Description: "Create a task in the pod.",
	Parameters: map[string]any{
		"type": "object",
		"properties": map[string]any{
			"title":    map[string]any{"type": "string", "minLength": 1, "maxLength": maxTitle},
			"assignee": map[string]any{"type": "string", "maxLength": maxAssignee, "description": "Who the task is for (a pod member's name)."},
			"notes":    map[string]any{"type": "string", "maxLength": maxNotes},
		},
		"required":             []string{"title"},
		"additionalProperties": false,
	},
}

type taskRequest struct {
	Title     string `json:"title"`
	Assignee  string `json:"assignee,omitempty"`
	Notes     string `json:"notes,omitempty"`
	CreatedBy string `json:"createdBy"`
}

// Effectful implements tools.Effectful: the call acts on the pod.
func (createTask) Effectful() {}

func (t createTask) Call(ctx context.Context, env tools.Env, args json.RawMessage) tools.Result {
	var a struct {
		Title    *string `json:"title"`
		Assignee string  `json:"assignee"`
		Notes    string  `json:"notes"`
	}
	if err := tools.DecodeArgs(args, &a); err != nil {
		return tools.Result{Err: err}
	}
	if a.Title == nil || strings.TrimSpace(*a.Title) == "" {
		return tools.Errorf("%w: title is required", tools.ErrBadArguments)
	}
	for _, f := range []struct {
		name  string
		value string
		max   int
	}{{"title", *a.Title, maxTitle}, {"assignee", a.Assignee, maxAssignee}, {"notes", a.Notes, maxNotes}} {
		if textcap.Len(f.value) > f.max {
			return tools.Errorf("%w: %s is longer than %d characters", tools.ErrBadArguments, f.name, f.max)
		}
	}
	if env.AgentName == "" {
		return tools.Errorf("pod: the turn has no agent name")
	}
	body := taskRequest{
		Title:     strings.TrimSpace(*a.Title),
		Assignee:  strings.TrimSpace(a.Assignee),
		Notes:     a.Notes,
		CreatedBy: env.AgentName,
	}
	var answer struct {
		ID string `json:"id"`
	}
	token, err := t.c.call(ctx, env, http.MethodPost, []string{"api", "v1", "pods", env.PodID, "tasks"}, nil, body, &answer)
	// A 2xx with an unreadable body still created the task; reporting a
	// failure would make the model create it again.
	if err != nil && !malformed(err) {
		return tools.Result{Err: err}
	}
	return tools.Result{Output: map[string]any{"created": true, "taskId": redact.Scrub(answer.ID, token)}}
}
