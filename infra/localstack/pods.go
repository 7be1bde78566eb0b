package localstack

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Pods is the local stand-in for the Commonly backend (pods' messages,
// agents' memory, tasks) and the credential broker, in memory, speaking
// the wires of shared/tools/pod and shared/broker. It lets a turn read
// and post to a pod without the real services (make run's demo, make
// invoke's turns); in AWS the runtime is pointed at those
// (COMMONLY_API_URL, BROKER_URL).
type Pods struct {
	// ServiceToken is the broker's service token (BROKER_TOKEN).
	ServiceToken string

	mu       sync.Mutex
	tokens   map[string]string // issued token -> user id
	messages map[string][]PodMessage
	memory   map[string]string
	tasks    map[string][]map[string]string
	seq      int
}

// PodMessage is one message of a pod.
type PodMessage struct {
	ID        string `json:"id"`
	Author    string `json:"author"`
	Content   string `json:"content"`
	CreatedAt string `json:"createdAt"`
}

// NewPods is an empty backend; Config.Pods serves it.
func NewPods() *Pods {
	return &Pods{
		ServiceToken: randomToken(), tokens: map[string]string{},
		messages: map[string][]PodMessage{}, memory: map[string]string{}, tasks: map[string][]map[string]string{},
	}
}

// Handler serves the backend's routes: the broker's and the pods'.
func (b *Pods) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/users/{user}/connections/{connector}", b.service(b.connection))
	mux.HandleFunc("POST /v1/users/{user}/tokens", b.service(b.token))
	mux.HandleFunc("GET /api/v1/pods/{pod}/messages", b.user(b.readMessages))
	mux.HandleFunc("POST /api/v1/pods/{pod}/messages", b.user(b.postMessage))
	mux.HandleFunc("GET /api/v1/pods/{pod}/agents/{agent}/memory", b.user(b.readMemory))
	mux.HandleFunc("POST /api/v1/pods/{pod}/agents/{agent}/memory", b.user(b.appendMemory))
	mux.HandleFunc("POST /api/v1/pods/{pod}/tasks", b.user(b.createTask))
	return mux
}

func (b *Pods) service(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer "+b.ServiceToken {
			http.Error(w, `{"error":"unauthorized"}`, http.StatusUnauthorized)
			return
		}
		h(w, r)
	}
}

func (b *Pods) user(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		tok, _ := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		b.mu.Lock()
		_, ok := b.tokens[tok]
		b.mu.Unlock()
		if !ok {
			http.Error(w, `{"error":"unauthorized"}`, http.StatusUnauthorized)
			return
		}
		h(w, r)
	}
}

func (b *Pods) connection(w http.ResponseWriter, r *http.Request) {
	// No connector is linked locally: connector tools stay off.
	writeJSON(w, http.StatusOK, map[string]string{"connector": r.PathValue("connector"), "status": "missing"})
}

func (b *Pods) token(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Audience string `json:"audience"`
	}
	if json.NewDecoder(r.Body).Decode(&req) != nil || req.Audience != "commonly" {
		http.Error(w, `{"error":"no connection for that audience"}`, http.StatusNotFound)
		return
	}
	tok := randomToken()
	b.mu.Lock()
	b.tokens[tok] = r.PathValue("user")
	b.mu.Unlock()
	writeJSON(w, http.StatusOK, map[string]string{"token": tok, "expiresAt": time.Now().Add(5 * time.Minute).UTC().Format(time.RFC3339)})
}

func (b *Pods) readMessages(w http.ResponseWriter, r *http.Request) {
	limit, _ := strconv.Atoi(r.URL.Query().Get("limit"))
	b.mu.Lock()
	msgs := b.messages[r.PathValue("pod")]
	if limit > 0 && len(msgs) > limit {
		msgs = msgs[len(msgs)-limit:]
	}
	out := append([]PodMessage{}, msgs...)
	b.mu.Unlock()
	writeJSON(w, http.StatusOK, map[string]any{"messages": out})
}

func (b *Pods) postMessage(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Content   string `json:"content"`
		AgentName string `json:"agentName"`
	}
	if json.NewDecoder(r.Body).Decode(&req) != nil || req.Content == "" {
		http.Error(w, `{"error":"content is required"}`, http.StatusBadRequest)
		return
	}
	id := b.Add(r.PathValue("pod"), req.AgentName, req.Content)
	writeJSON(w, http.StatusCreated, map[string]string{"id": id})
}

// Add posts a message to a pod as author, and returns its id.
func (b *Pods) Add(pod, author, content string) string {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.seq++
	id := fmt.Sprintf("msg-%d", b.seq)
	b.messages[pod] = append(b.messages[pod], PodMessage{ID: id, Author: author, Content: content, CreatedAt: time.Now().UTC().Format(time.RFC3339)})
	return id
}

func (b *Pods) readMemory(w http.ResponseWriter, r *http.Request) {
	b.mu.Lock()
	content := b.memory[r.PathValue("pod")+"/"+r.PathValue("agent")]
	b.mu.Unlock()
	writeJSON(w, http.StatusOK, map[string]string{"content": content})
}

func (b *Pods) appendMemory(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Append string `json:"append"`
	}
	if json.NewDecoder(r.Body).Decode(&req) != nil || req.Append == "" {
		http.Error(w, `{"error":"append is required"}`, http.StatusBadRequest)
		return
	}
	k := r.PathValue("pod") + "/" + r.PathValue("agent")
	b.mu.Lock()
	if b.memory[k] != "" {
		b.memory[k] += "\n"
	}
	b.memory[k] += req.Append
	b.mu.Unlock()
	w.WriteHeader(http.StatusNoContent)
}

func (b *Pods) createTask(w http.ResponseWriter, r *http.Request) {
	var req map[string]string
	if json.NewDecoder(r.Body).Decode(&req) != nil || req["title"] == "" {
		http.Error(w, `{"error":"title is required"}`, http.StatusBadRequest)
		return
	}
	b.mu.Lock()
	b.seq++
	req["id"] = fmt.Sprintf("task-%d", b.seq)
	b.tasks[r.PathValue("pod")] = append(b.tasks[r.PathValue("pod")], req)
	b.mu.Unlock()
	writeJSON(w, http.StatusCreated, map[string]string{"id": req["id"]})
}

// Messages returns a pod's messages, for the demo's printout.
func (b *Pods) Messages(pod string) []PodMessage {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]PodMessage{}, b.messages[pod]...)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func randomToken() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return "local-" + hex.EncodeToString(b[:])
}
