// Package script is the benchmark's scripted chat-completions server: the
// same three answers for every turn of either side, with zero think time.
//
// A turn is two tool calls and a final answer. The answer is chosen by
// the number of tool messages in the request (0: call the tool, 1: call
// it again, 2: answer), so repeated or concurrent turns are deterministic
// whatever the order their requests arrive in, and both sides, which
// send the same conversation shape, get byte-identical answers.
package script

import (
	"github.com/commonly/runtime/shared/llm/llmtest"

	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
)

// Tool is the name of the no-op function tool both sides offer.
const Tool = "noop"

// Final is the final answer of every turn.
const Final = "done"

// Steps is the number of model calls of one turn; Calls of them call the tool.
const (
	Steps = 3
	Calls = 2
)

// Usage reported by every answer (OpenAI shape).
const (
	PromptTokens     = 120
	CompletionTokens = 30
)

// Server serves POST /chat/completions and /v1/chat/completions.
type Server struct {
	requests atomic.Int64
	rejected atomic.Int64
	answers  sync.Map // step/model → encoded answer
}

// Counts is what the server saw.
type Counts struct {
	Requests int64 `json:"requests"`
	Rejected int64 `json:"rejected"`
}

// Counts returns the totals so far.
func (s *Server) Counts() Counts {
	return Counts{Requests: s.requests.Load(), Rejected: s.rejected.Load()}
}

// request is the part of a chat-completions request the script reads.
type request struct {
	Model    string `json:"model"`
	Stream   bool   `json:"stream"`
	Messages []struct {
		Role string `json:"role"`
	} `json:"messages"`
	Tools []struct {
		Function struct {
			Name string `json:"name"`
		} `json:"function"`
	} `json:"tools"`
}

func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	n := s.requests.Add(1)
	if r.Method != http.MethodPost || (r.URL.Path != "/chat/completions" && r.URL.Path != "/v1/chat/completions") {
		s.reject(w, http.StatusNotFound, "no such route")
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	var req request
	if err != nil || json.Unmarshal(body, &req) != nil {
		s.reject(w, http.StatusBadRequest, "request body is not valid JSON")
		return
	}
	if req.Model == "" {
		s.reject(w, http.StatusBadRequest, "a model is required")
		return
	}
	offered := false
	for _, t := range req.Tools {
		offered = offered || t.Function.Name == Tool
	}
	if !offered {
		s.reject(w, http.StatusBadRequest, "the "+Tool+" tool is not offered")
		return
	}
	toolMsgs := 0
	for _, m := range req.Messages {
		if m.Role == "tool" {
			toolMsgs++
		}
	}
	if toolMsgs > Calls {
		s.reject(w, http.StatusBadRequest, fmt.Sprintf("%d tool messages: the script has %d calls", toolMsgs, Calls))
		return
	}
	w.Header().Set("Content-Type", "application/json")
	if req.Stream {
		w.Header().Set("Content-Type", "text/event-stream")
	}
	w.Header().Set("x-litellm-call-id", "bench-"+strconv.FormatInt(n, 10))
	_, _ = w.Write(s.answer(req.Model, toolMsgs, req.Stream))
}

// answer is Answer, encoded once per model, step and form (whole, or
// streamed as LiteLLM streams it, llmtest.StreamOf).
func (s *Server) answer(model string, toolMsgs int, stream bool) []byte {
	key := strconv.Itoa(toolMsgs) + "/" + model + "/" + strconv.FormatBool(stream)
	if b, ok := s.answers.Load(key); ok {
		return b.([]byte)
	}
	b := Answer(model, toolMsgs)
	if stream {
		var err error
		if b, err = llmtest.StreamOf(b); err != nil {
			panic(err) // Answer is ours: it always decodes
		}
	}
	s.answers.Store(key, b)
	return b
}

func (s *Server) reject(w http.ResponseWriter, status int, msg string) {
	s.rejected.Add(1)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	b, _ := json.Marshal(map[string]any{"error": map[string]any{"message": "script: " + msg, "type": "invalid_request_error", "code": strconv.Itoa(status)}})
	_, _ = w.Write(b)
}

// Answer is the scripted completion after toolMsgs tool messages.
func Answer(model string, toolMsgs int) []byte {
	type fn struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	}
	type call struct {
		ID       string `json:"id"`
		Type     string `json:"type"`
		Function fn     `json:"function"`
	}
	msg := map[string]any{"role": "assistant", "content": nil}
	finish := "tool_calls"
	if toolMsgs < Calls {
		step := toolMsgs + 1
		msg["tool_calls"] = []call{{
			ID: fmt.Sprintf("call_%d", step), Type: "function",
			Function: fn{Name: Tool, Arguments: fmt.Sprintf(`{"step":%d}`, step)},
		}}
	} else {
		msg["content"], finish = Final, "stop"
	}
	b, _ := json.Marshal(map[string]any{
		"id": fmt.Sprintf("chatcmpl-bench-%d", toolMsgs), "object": "chat.completion", "created": 1767225600, "model": model,
		"choices": []any{map[string]any{"index": 0, "finish_reason": finish, "message": msg, "logprobs": nil}},
		"usage": map[string]any{
			"prompt_tokens": PromptTokens, "completion_tokens": CompletionTokens, "total_tokens": PromptTokens + CompletionTokens,
			"prompt_tokens_details": map[string]any{"cached_tokens": 0}, "completion_tokens_details": map[string]any{"reasoning_tokens": 0},
		},
	})
	return b
}
