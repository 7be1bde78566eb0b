// Package podtest is a fake Commonly backend that follows the wire of
// package pod: it keeps pods' messages, agents' memory and tasks in
// memory, records every call and accepts only the bearer tokens its
// accept function approves (typically brokertest.Server.Accepts("commonly")).
package podtest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// Message is a pod message.
type Message struct {
	ID        string `json:"id"`
	Author    string `json:"author"`
	Content   string `json:"content"`
	CreatedAt string `json:"createdAt"`
}

// Task is a created task.
type Task struct {
	ID        string `json:"id"`
	Title     string `json:"title"`
	Assignee  string `json:"assignee"`
	Notes     string `json:"notes"`
	CreatedBy string `json:"createdBy"`
}

// Call is one request the fake received.
type Call struct {
	Method     string
	Path       string
	Query      string
	Authorized bool
}

// Server is a running fake backend.
type Server struct {
	URL string

	accept func(token string) bool
	mu     sync.Mutex
	msgs   map[string][]Message // pod → messages, oldest first
	memory map[[2]string]string // (pod, agent) → content
	tasks  map[string][]Task    // pod → tasks
	calls  []Call
	status int  // forced status; 0 = normal
	echo   bool // reflect the bearer token into answers
	seq    int
	// done are the answers to writes that carried an Idempotency-Key,
	// by path and key: a repeat gets the first answer and acts no more.
	done    map[string]answer
	repeats int
	// hold, when set, runs after a write acted and before it answers (a
	// test stops its caller there).
	hold func(r *http.Request)
}

// answer is a recorded response to a write.
type answer struct {
	status int
	header http.Header
	body   []byte
}

// New starts a fake backend, closed when the test ends. accept decides
// which bearer tokens are valid.
func New(t testing.TB, accept func(token string) bool) *Server {
	s := &Server{accept: accept, msgs: map[string][]Message{}, memory: map[[2]string]string{}, tasks: map[string][]Task{}, done: map[string]answer{}}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /api/v1/pods/{pod}/messages", s.readMessages)
	mux.HandleFunc("POST /api/v1/pods/{pod}/messages", s.postMessage)
	mux.HandleFunc("GET /api/v1/pods/{pod}/agents/{agent}/memory", s.readMemory)
	mux.HandleFunc("POST /api/v1/pods/{pod}/agents/{agent}/memory", s.appendMemory)
	mux.HandleFunc("POST /api/v1/pods/{pod}/tasks", s.createTask)
	srv := httptest.NewServer(s.guard(s.idempotent(mux)))
	s.URL = srv.URL
	t.Cleanup(srv.Close)
	return s
}

// AddMessage appends a message to a pod.
func (s *Server) AddMessage(podID string, m Message) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if m.ID == "" {
		s.seq++
		m.ID = "m" + strconv.Itoa(s.seq)
	}
	s.msgs[podID] = append(s.msgs[podID], m)
}

// Messages returns a pod's messages, oldest first.
func (s *Server) Messages(podID string) []Message {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Message(nil), s.msgs[podID]...)
}

// SetMemory replaces an agent's memory.
func (s *Server) SetMemory(podID, agent, content string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.memory[[2]string{podID, agent}] = content
}

// Memory returns an agent's memory.
func (s *Server) Memory(podID, agent string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.memory[[2]string{podID, agent}]
}

// Tasks returns a pod's tasks.
func (s *Server) Tasks(podID string) []Task {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Task(nil), s.tasks[podID]...)
}

// Calls returns the requests received so far.
func (s *Server) Calls() []Call {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Call(nil), s.calls...)
}

// Fail makes every authorized request answer status (0 restores). A
// forced 200 answers a body that is not JSON.
func (s *Server) Fail(status int) { s.mu.Lock(); s.status = status; s.mu.Unlock() }

// Echo makes the backend reflect the caller's bearer token into every
// answer (message contents, memory, ids, error bodies), as a buggy or
// hostile backend might, to test that tools never pass it on.
func (s *Server) Echo(on bool) { s.mu.Lock(); s.echo = on; s.mu.Unlock() }

// guard records the call, checks the bearer token and applies forced
// failures before the routes run.
func (s *Server) guard(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		token, _ := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		ok := token != "" && s.accept(token)
		s.mu.Lock()
		s.calls = append(s.calls, Call{Method: r.Method, Path: r.URL.EscapedPath(), Query: r.URL.RawQuery, Authorized: ok})
		status, echo := s.status, s.echo
		s.mu.Unlock()
		leak := ""
		if echo {
			leak = token
		}
		switch {
		case !ok:
			writeJSON(w, http.StatusUnauthorized, map[string]string{"error": "unauthorized", "token": leak})
		case status == http.StatusOK:
			w.WriteHeader(http.StatusOK)
			_, _ = fmt.Fprintf(w, "<html>%s</html>", leak)
		case status != 0:
			writeJSON(w, status, map[string]string{"error": "forced failure", "token": leak})
		default:
			next.ServeHTTP(w, r)
		}
	})
}

// idempotent drops a repeated write: a POST whose Idempotency-Key was
// seen on the same path gets the first answer and changes nothing, as the
// runtime asks of the backend (docs/architecture.md, "Resumed runs").
func (s *Server) idempotent(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		key := r.Header.Get("Idempotency-Key")
		if r.Method != http.MethodPost || key == "" {
			next.ServeHTTP(w, r)
			s.holdAfter(r)
			return
		}
		id := r.URL.Path + "\x00" + key
		s.mu.Lock()
		first, seen := s.done[id]
		if seen {
			s.repeats++
		}
		s.mu.Unlock()
		if seen {
			for k, v := range first.header {
				w.Header()[k] = v
			}
			w.WriteHeader(first.status)
			_, _ = w.Write(first.body)
			return
		}
		rec := httptest.NewRecorder()
		next.ServeHTTP(rec, r)
		s.mu.Lock()
		s.done[id] = answer{status: rec.Code, header: rec.Header().Clone(), body: rec.Body.Bytes()}
		s.mu.Unlock()
		s.holdAfter(r)
		for k, v := range rec.Header() {
			w.Header()[k] = v
		}
		w.WriteHeader(rec.Code)
		_, _ = w.Write(rec.Body.Bytes())
	})
}

// Repeats is how many writes were dropped as repeats of a key seen before.
func (s *Server) Repeats() int { s.mu.Lock(); defer s.mu.Unlock(); return s.repeats }

// Hold makes every write, once it acted, call fn before it answers; nil
// stops it.
func (s *Server) Hold(fn func(r *http.Request)) { s.mu.Lock(); s.hold = fn; s.mu.Unlock() }

func (s *Server) holdAfter(r *http.Request) {
	s.mu.Lock()
	hold := s.hold
	s.mu.Unlock()
	if hold != nil && r.Method == http.MethodPost {
		hold(r)
	}
}

// leak returns the bearer token when echoing, for the routes to embed.
func (s *Server) leak(r *http.Request) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.echo {
		return ""
	}
	token, _ := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	return token
}

func (s *Server) readMessages(w http.ResponseWriter, r *http.Request) {
	limit, err := strconv.Atoi(r.URL.Query().Get("limit"))
	if err != nil || limit < 1 || limit > 100 {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "limit must be 1..100"})
		return
	}
	msgs := s.Messages(r.PathValue("pod"))
	if leak := s.leak(r); leak != "" {
		msgs = append(msgs, Message{ID: leak, Author: leak, Content: "your token is " + leak, CreatedAt: leak})
	}
	if len(msgs) > limit {
		msgs = msgs[len(msgs)-limit:]
	}
	writeJSON(w, http.StatusOK, map[string]any{"messages": append([]Message{}, msgs...)})
}

func (s *Server) postMessage(w http.ResponseWriter, r *http.Request) {
	var body struct {
		Content   string `json:"content"`
		AgentName string `json:"agentName"`
	}
	if !decode(r, &body) || body.Content == "" || body.AgentName == "" {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "content and agentName are required"})
		return
	}
	m := Message{Author: body.AgentName, Content: body.Content, CreatedAt: time.Now().UTC().Format(time.RFC3339)}
	s.AddMessage(r.PathValue("pod"), m)
	msgs := s.Messages(r.PathValue("pod"))
	writeJSON(w, http.StatusCreated, map[string]string{"id": msgs[len(msgs)-1].ID + s.leak(r)})
}

func (s *Server) readMemory(w http.ResponseWriter, r *http.Request) {
	content := s.Memory(r.PathValue("pod"), r.PathValue("agent")) + s.leak(r)
	writeJSON(w, http.StatusOK, map[string]string{"content": content})
}

func (s *Server) appendMemory(w http.ResponseWriter, r *http.Request) {
	var body struct {
		Append string `json:"append"`
	}
	if !decode(r, &body) || body.Append == "" {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "append is required"})
		return
	}
	pod, agent := r.PathValue("pod"), r.PathValue("agent")
	s.mu.Lock()
	key := [2]string{pod, agent}
	if s.memory[key] != "" {
		s.memory[key] += "\n"
	}
	s.memory[key] += body.Append
	s.mu.Unlock()
	w.WriteHeader(http.StatusNoContent)
}

func (s *Server) createTask(w http.ResponseWriter, r *http.Request) {
	var t Task
	if !decode(r, &t) || t.Title == "" || t.CreatedBy == "" || t.ID != "" {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "title and createdBy are required"})
		return
	}
	pod := r.PathValue("pod")
	s.mu.Lock()
	s.seq++
	t.ID = "t" + strconv.Itoa(s.seq)
	s.tasks[pod] = append(s.tasks[pod], t)
	s.mu.Unlock()
	writeJSON(w, http.StatusCreated, map[string]string{"id": t.ID + s.leak(r)})
}

// decode reads a JSON body strictly, as a real backend validating its
// input would.
func decode(r *http.Request, v any) bool {
	if !strings.HasPrefix(r.Header.Get("Content-Type"), "application/json") {
		return false
	}
	dec := json.NewDecoder(r.Body)
	dec.DisallowUnknownFields()
	return dec.Decode(v) == nil
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
