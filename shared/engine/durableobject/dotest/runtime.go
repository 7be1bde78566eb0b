// Package dotest is a stand-in for the Durable Object runtime, the older
// Cloudflare runtime the fallback engine (shared/engine/durableobject)
// forwards turns to. It speaks the engine's wire (documented there):
//
//	POST /agents/{agentName}/{instanceId}/turns
//	Authorization: Bearer {token}
//	{"runId", "userId", "podId", "message", "trigger"}
//	200 {"finalMessage", "usage": {"model", "promptTokens", "cachedPromptTokens", "completionTokens"}}
//
// A wrong or missing bearer token is 401, another route 404. It answers
// with usage, or slowly (Delay, or never: Hang), or fails (Status), as a
// test or the local stack tells it; a Script answers each turn as it
// likes. The engine's and the handler's tests use it, and `make run`
// serves it when DO_RUNTIME_URL names no real runtime.
package dotest

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"
)

// Model and the usage of Default, the answer every turn gets unless told
// otherwise.
const (
	Model              = "deepseek-v4-flash"
	PromptTokens       = 1200
	CachedPromptTokens = 1024
	CompletionTokens   = 80
	DefaultAnswer      = "answer from the durable object"
	// InternalError is the body of a failure: internal text the runtime
	// must never pass on to a client.
	InternalError = `{"error":"do internal: secret stack trace"}`
)

// Turn is what the engine sends, and where.
type Turn struct {
	AgentName, InstanceID string
	Authorization         string // the header as sent
	Path                  string // the escaped path as sent
	RunID                 string `json:"runId"`
	UserID                string `json:"userId"`
	PodID                 string `json:"podId"`
	Message               string `json:"message"`
	Trigger               string `json:"trigger"`
	// MaxCostMicros is the most the turn may spend (the spend cap's
	// reservation); zero when the request carries none.
	MaxCostMicros int64 `json:"maxCostMicros"`
	// Fields holds every field of the body, to check that nothing else
	// is sent.
	Fields map[string]string `json:"-"`
}

// Usage is the usage an answer reports.
type Usage struct {
	Model              string `json:"model"`
	PromptTokens       int64  `json:"promptTokens"`
	CachedPromptTokens int64  `json:"cachedPromptTokens"`
	CompletionTokens   int64  `json:"completionTokens"`
}

// Reply is how the runtime answers one turn.
type Reply struct {
	FinalMessage string
	// Usage nil answers without usage (a break of the wire).
	Usage *Usage
	// Status, when not 0 or 200, fails the turn with that status and
	// InternalError.
	Status int
	// Delay holds the answer back; Hang never answers (the request ends
	// when the client gives up).
	Delay time.Duration
	Hang  bool
}

// Default is the answer with usage every turn gets unless told otherwise.
func Default(Turn) Reply {
	return Reply{FinalMessage: DefaultAnswer, Usage: &Usage{Model: Model, PromptTokens: PromptTokens, CachedPromptTokens: CachedPromptTokens, CompletionTokens: CompletionTokens}}
}

// Runtime is the stand-in: an http.Handler.
type Runtime struct {
	// Token is the bearer token it accepts; "" accepts any.
	Token string

	mu     sync.Mutex
	turns  []Turn
	script func(Turn) Reply
	raw    http.HandlerFunc
}

// New is a runtime that accepts token and answers Default until told
// otherwise.
func New(token string) *Runtime { return &Runtime{Token: token} }

// Script makes each turn's answer script's (nil: Default).
func (rt *Runtime) Script(script func(Turn) Reply) {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	rt.script = script
}

// Answer makes every turn's answer reply.
func (rt *Runtime) Answer(reply Reply) { rt.Script(func(Turn) Reply { return reply }) }

// Raw answers every turn with h, for answers off the wire (unreadable,
// oversized); the turn is recorded first.
func (rt *Runtime) Raw(h http.HandlerFunc) {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	rt.raw = h
}

// Turns are the turns received (with a valid token), in order.
func (rt *Runtime) Turns() []Turn {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	return append([]Turn(nil), rt.turns...)
}

func (rt *Runtime) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	// Split before unescaping: an id is one escaped segment.
	parts := strings.Split(strings.TrimPrefix(r.URL.EscapedPath(), "/"), "/")
	if r.Method != http.MethodPost || len(parts) != 4 || parts[0] != "agents" || parts[3] != "turns" {
		http.Error(w, `{"error":"not found"}`, http.StatusNotFound)
		return
	}
	for i, p := range parts {
		parts[i], _ = url.PathUnescape(p)
	}
	if rt.Token != "" && r.Header.Get("Authorization") != "Bearer "+rt.Token {
		w.Header().Set("WWW-Authenticate", "Bearer")
		http.Error(w, `{"error":"unauthorized"}`, http.StatusUnauthorized)
		return
	}
	t := Turn{AgentName: parts[1], InstanceID: parts[2], Authorization: r.Header.Get("Authorization"), Path: r.URL.EscapedPath()}
	var raw map[string]any
	if err := json.NewDecoder(r.Body).Decode(&raw); err != nil {
		http.Error(w, `{"error":"bad request"}`, http.StatusBadRequest)
		return
	}
	t.Fields = map[string]string{}
	for k, v := range raw {
		switch v := v.(type) {
		case string:
			t.Fields[k] = v
		default: // a number, as sent
			b, _ := json.Marshal(v)
			t.Fields[k] = string(b)
		}
	}
	if n, ok := raw["maxCostMicros"].(float64); ok {
		t.MaxCostMicros = int64(n)
	}
	t.RunID, t.UserID, t.PodID, t.Message, t.Trigger = t.Fields["runId"], t.Fields["userId"], t.Fields["podId"], t.Fields["message"], t.Fields["trigger"]
	rt.mu.Lock()
	rt.turns = append(rt.turns, t)
	script, rawAnswer := rt.script, rt.raw
	rt.mu.Unlock()
	if rawAnswer != nil {
		rawAnswer(w, r)
		return
	}
	if script == nil {
		script = Default
	}
	reply := script(t)
	if reply.Hang {
		<-r.Context().Done()
		return
	}
	if reply.Delay > 0 {
		select {
		case <-r.Context().Done():
			return
		case <-time.After(reply.Delay):
		}
	}
	w.Header().Set("Content-Type", "application/json")
	if reply.Status != 0 && reply.Status != http.StatusOK {
		w.WriteHeader(reply.Status)
		_, _ = w.Write([]byte(InternalError))
		return
	}
	body := map[string]any{"finalMessage": reply.FinalMessage}
	if reply.Usage != nil {
		body["usage"] = reply.Usage
	}
	_ = json.NewEncoder(w).Encode(body)
}
