package pod

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/commonly/runtime/shared/llm"
	"github.com/commonly/runtime/shared/redact"
	"github.com/commonly/runtime/shared/textcap"
	"github.com/commonly/runtime/shared/tools"
)

// readMemory is commonly_read_memory: the agent's notes in this pod.
type readMemory struct{ c *Client }

func (readMemory) Spec() llm.ToolSpec { return readMemorySpec }

var readMemorySpec = llm.ToolSpec{
	Name:        NameReadMemory,
	Description: "Read your memory for this pod: timestamped notes you wrote in earlier turns.",
	Parameters:  map[string]any{"type": "object", "properties": map[string]any{}, "additionalProperties": false},
}

func (t readMemory) Call(ctx context.Context, env tools.Env, args json.RawMessage) tools.Result {
	var a struct{}
	if err := tools.DecodeArgs(args, &a); err != nil {
		return tools.Result{Err: err}
	}
	var answer struct {
		Content string `json:"content"`
	}
	token, err := t.c.call(ctx, env, http.MethodGet, memoryPath(env), nil, nil, &answer)
	if err != nil {
		return tools.Result{Err: err}
	}
	// Entries are appended, so the latest are at the end: keep those.
	content, cut := textcap.Tail(redact.Scrub(answer.Content, token), maxMemoryRead)
	out := map[string]any{"content": content}
	if cut {
		out["note"] = fmt.Sprintf("earlier memory omitted: reads are capped at the last %d characters", maxMemoryRead)
	}
	return tools.Result{Output: out}
}

// writeMemory is commonly_write_memory: a timestamped append.
type writeMemory struct{ c *Client }

func (writeMemory) Spec() llm.ToolSpec { return writeMemorySpec }

var writeMemorySpec = contentSpec(NameWriteMemory, "Append a note to your memory for this pod. It is stamped with the current UTC time; earlier notes are kept.", "The note to remember.", maxMemoryWrite)

// Effectful implements tools.Effectful: the call acts on the pod.
func (writeMemory) Effectful() {}

func (t writeMemory) Call(ctx context.Context, env tools.Env, args json.RawMessage) tools.Result {
	content, err := decodeContent(args, maxMemoryWrite)
	if err != nil {
		return tools.Result{Err: err}
	}
	// The stamp is the tool's, not the model's: the model does not know
	// the time, and the backend only appends.
	stamp := t.c.now().UTC().Format(time.RFC3339)
	body := map[string]string{"append": stamp + " " + strings.TrimSpace(content)}
	if _, err := t.c.call(ctx, env, http.MethodPost, memoryPath(env), nil, body, nil); err != nil {
		return tools.Result{Err: err}
	}
	return tools.Result{Output: map[string]any{"written": true, "at": stamp}}
}

func memoryPath(env tools.Env) []string {
	return []string{"api", "v1", "pods", env.PodID, "agents", env.AgentName, "memory"}
}
