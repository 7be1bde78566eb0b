// Package llmtest is a scriptable fake of an OpenAI-compatible
// chat-completions endpoint as LiteLLM in front of DeepSeek serves it
// (reference §9), for tests of the model client and the agent loop through
// httptest. It answers a request with "stream": true as the stream of
// chunks of the same answer (stream.go, reference §5).
package llmtest

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"sync"
	"time"
)

// Header names LiteLLM sets on answers.
const (
	CallIDHeader = "x-litellm-call-id"
	CostHeader   = "x-litellm-response-cost"
)

// created is the fixed timestamp of every answer, for reproducible bodies.
const created = 1767225600

// Recorded is one request the server received.
type Recorded struct {
	Path   string
	Header http.Header
	// Body is the decoded request; zero when it did not decode.
	Body ChatRequest
	// Status is what the server answered (0 while a hang is held).
	Status int
}

// Server plays a script of steps, one per valid request. It is an
// http.Handler: serve it with httptest.NewServer.
type Server struct {
	key string
	// HangLimit releases a Hang step if the client never gives up, so that
	// closing the test server cannot block forever. Set it before serving.
	HangLimit time.Duration

	mu       sync.Mutex
	script   []Step
	played   int
	seq      int
	requests []Recorded
	issued   map[string]issuedCall
	// respond, when set, answers instead of the script (Respond).
	respond   func(ChatRequest) Step
	responded int
}

// NewServer returns a server that requires "Authorization: Bearer key" and
// plays steps in order.
func NewServer(key string, steps ...Step) *Server {
	return &Server{key: key, HangLimit: 30 * time.Second, script: steps, issued: map[string]issuedCall{}}
}

// Push appends steps to the script.
func (s *Server) Push(steps ...Step) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.script = append(s.script, steps...)
}

// Requests returns what was received so far, rejected requests included.
func (s *Server) Requests() []Recorded {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Recorded(nil), s.requests...)
}

// Count is the number of requests received.
func (s *Server) Count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.requests)
}

// Remaining is the number of steps not yet played.
func (s *Server) Remaining() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.script) - s.played
}

func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	s.seq++
	callID := fmt.Sprintf("llmtest-call-%d", s.seq)
	idx := len(s.requests)
	s.requests = append(s.requests, Recorded{Path: r.URL.Path, Header: r.Header.Clone()})
	s.mu.Unlock()
	// LiteLLM sets the call id on every answer, errors included.
	w.Header().Set(CallIDHeader, callID)

	status, step, req := s.admit(w, r, idx)
	s.mu.Lock()
	s.requests[idx].Body = req
	s.mu.Unlock()
	if status != 0 {
		s.setStatus(idx, status)
		return
	}
	if step.CallID != "" {
		w.Header().Set(CallIDHeader, step.CallID)
	}
	s.setStatus(idx, s.play(w, r, step, req))
}

// admit authenticates, decodes and validates a request and takes the next
// step. A non-zero status means the answer was already written.
func (s *Server) admit(w http.ResponseWriter, r *http.Request, idx int) (int, Step, ChatRequest) {
	var req ChatRequest
	if r.URL.Path != "/chat/completions" && r.URL.Path != "/v1/chat/completions" {
		return writeError(w, http.StatusNotFound, "Not Found", "not_found_error"), Step{}, req
	}
	if r.Method != http.MethodPost {
		return writeError(w, http.StatusMethodNotAllowed, "Method Not Allowed", "invalid_request_error"), Step{}, req
	}
	if r.Header.Get("Authorization") != "Bearer "+s.key {
		return writeError(w, http.StatusUnauthorized, "Authentication Error, invalid proxy server token passed.", "auth_error"), Step{}, req
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, 8<<20))
	if err != nil || json.Unmarshal(body, &req) != nil {
		return writeError(w, http.StatusBadRequest, "request body is not valid JSON", "invalid_request_error"), Step{}, req
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if msg := validate(req, s.issued); msg != "" {
		return writeError(w, http.StatusBadRequest, msg, "invalid_request_error"), Step{}, req
	}
	if s.respond != nil {
		s.responded++
		return 0, s.respond(req), req
	}
	if s.played >= len(s.script) {
		// Loud, so a test that calls more often than it scripted fails.
		return writeError(w, http.StatusInternalServerError, fmt.Sprintf("llmtest: script exhausted at request %d", idx+1), ""), Step{}, req
	}
	step := s.script[s.played]
	s.played++
	return 0, step, req
}

// play writes the step's answer and returns its status.
func (s *Server) play(w http.ResponseWriter, r *http.Request, step Step, req ChatRequest) int {
	switch {
	case step.Error != nil:
		for k, vs := range step.Error.Header {
			w.Header()[k] = vs
		}
		return writeErrorValue(w, step.Error.Status, step.Error.Message, step.Error.Type)
	case step.Hang:
		select {
		case <-r.Context().Done():
		case <-time.After(s.HangLimit):
		}
		return writeError(w, http.StatusRequestTimeout, "llmtest: hang released", "timeout")
	}

	usage := DefaultUsage
	if step.Usage != nil {
		usage = *step.Usage
	}
	c := completion{
		ID:      "chatcmpl-" + w.Header().Get(CallIDHeader),
		Object:  "chat.completion",
		Created: created,
		Model:   req.Model,
		Choices: []choice{},
		Usage:   encodeUsage(usage),
	}
	if !step.EmptyChoices {
		c.Choices = append(c.Choices, s.answer(step, w.Header().Get(CallIDHeader)))
	}
	if req.Stream {
		// Headers precede generation: no cost header on a stream.
		return writeStream(w, c, step)
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set(CostHeader, strconv.FormatFloat(costUSD(usage), 'f', -1, 64))
	w.WriteHeader(http.StatusOK)
	_ = json.NewEncoder(w).Encode(c)
	return http.StatusOK
}

// answer builds the step's choice and remembers the calls it issues.
func (s *Server) answer(step Step, callID string) choice {
	msg := responseMessage{Role: "assistant", ReasoningContent: step.Reasoning}
	if step.Text != "" || len(step.ToolCalls) == 0 {
		text := step.Text
		msg.Content = &text
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, tc := range step.ToolCalls {
		id := tc.ID
		if id == "" {
			id = fmt.Sprintf("call_%s_%d", callID, i)
		}
		var wc WireToolCall
		wc.ID, wc.Type = id, "function"
		wc.Function.Name, wc.Function.Arguments = tc.Name, tc.Arguments
		msg.ToolCalls = append(msg.ToolCalls, wc)
		s.issued[id] = issuedCall{name: tc.Name, arguments: tc.Arguments, reasoning: step.Reasoning}
	}
	finish := step.FinishReason
	if finish == "" {
		finish = "stop"
		if len(step.ToolCalls) > 0 {
			finish = "tool_calls"
		}
	}
	return choice{FinishReason: finish, Message: msg}
}

func (s *Server) setStatus(idx, status int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.requests[idx].Status = status
}
