// Package brokertest is a fake credential broker that follows the wire of
// package broker. It records every call, serves configurable connection
// statuses and issues distinct random tokens, and it exposes the tokens it
// issued so that tests can assert none of them leaks into a tool result
// or a log line.
package brokertest

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/commonly/runtime/shared/broker"
)

// Call is one request the fake received.
type Call struct {
	Method     string
	UserID     string
	Connector  string // connection checks
	Audience   string // token requests
	Authorized bool   // the service credential was right
}

// Issued is a token the fake handed out.
type Issued struct {
	Token    string
	UserID   string
	Audience string
}

// Server is a running fake broker.
type Server struct {
	URL          string
	ServiceToken string

	srv *httptest.Server

	mu          sync.Mutex
	connections map[[2]string]string // (user, connector) → status
	tokenStatus int                  // forced status of token requests; 0 = normal
	connStatus  int                  // forced status of connection checks; 0 = normal
	calls       []Call
	issued      []Issued
}

// New starts a fake broker, closed when the test ends.
func New(t testing.TB) *Server {
	s := &Server{ServiceToken: "svc_" + random(), connections: map[[2]string]string{}}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/users/{user}/connections/{connector}", s.connection)
	mux.HandleFunc("POST /v1/users/{user}/tokens", s.token)
	s.srv = httptest.NewServer(mux)
	s.URL = s.srv.URL
	t.Cleanup(s.srv.Close)
	return s
}

// Client is a broker client of this fake with its service credential.
func (s *Server) Client(t testing.TB) *broker.Client {
	c, err := broker.New(broker.Config{BaseURL: s.URL, Token: s.ServiceToken, HTTPClient: s.srv.Client()})
	if err != nil {
		t.Fatalf("brokertest: %v", err)
	}
	return c
}

// SetConnection sets the status of a user's connection ("active",
// "revoked", "expired"; "missing" or "" removes it, which answers 404).
func (s *Server) SetConnection(userID, connector, status string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if status == "" || status == broker.StatusMissing {
		delete(s.connections, [2]string{userID, connector})
		return
	}
	s.connections[[2]string{userID, connector}] = status
}

// FailTokens makes token requests answer status (0 restores normal service).
func (s *Server) FailTokens(status int) { s.mu.Lock(); s.tokenStatus = status; s.mu.Unlock() }

// FailConnections makes connection checks answer status (0 restores).
func (s *Server) FailConnections(status int) { s.mu.Lock(); s.connStatus = status; s.mu.Unlock() }

// Calls returns the requests received so far.
func (s *Server) Calls() []Call {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Call(nil), s.calls...)
}

// Issued returns every token handed out so far.
func (s *Server) Issued() []Issued {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Issued(nil), s.issued...)
}

// Secrets are every token issued and the service credential: the strings
// that must never appear in a tool result or a log.
func (s *Server) Secrets() []string {
	out := []string{s.ServiceToken}
	for _, i := range s.Issued() {
		out = append(out, i.Token)
	}
	return out
}

// Lookup tells a fake upstream (the Commonly backend, GitHub) who a bearer
// token was issued to, so that it can accept only brokered tokens.
func (s *Server) Lookup(token string) (Issued, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, i := range s.issued {
		if i.Token == token {
			return i, true
		}
	}
	return Issued{}, false
}

// Accepts returns a bearer-token check for fake upstreams: the token must
// have been issued by this broker for audience.
func (s *Server) Accepts(audience string) func(token string) bool {
	return func(token string) bool {
		i, ok := s.Lookup(token)
		return ok && i.Audience == audience
	}
}

func (s *Server) authorized(r *http.Request) bool {
	return r.Header.Get("Authorization") == "Bearer "+s.ServiceToken
}

func (s *Server) connection(w http.ResponseWriter, r *http.Request) {
	user, connector := r.PathValue("user"), r.PathValue("connector")
	ok := s.authorized(r)
	s.mu.Lock()
	s.calls = append(s.calls, Call{Method: r.Method, UserID: user, Connector: connector, Authorized: ok})
	status, found := s.connections[[2]string{user, connector}]
	forced := s.connStatus
	s.mu.Unlock()
	switch {
	case !ok:
		http.Error(w, `{"error":"unauthorized"}`, http.StatusUnauthorized)
	case forced != 0:
		s.fail(w, forced)
	case !found:
		http.Error(w, `{"error":"not_found"}`, http.StatusNotFound)
	default:
		writeJSON(w, map[string]string{"connector": connector, "status": status})
	}
}

func (s *Server) token(w http.ResponseWriter, r *http.Request) {
	user := r.PathValue("user")
	ok := s.authorized(r)
	var req struct {
		Audience string `json:"audience"`
		Scope    string `json:"scope"`
	}
	dec := json.NewDecoder(r.Body)
	dec.DisallowUnknownFields()
	decodeErr := dec.Decode(&req)

	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls = append(s.calls, Call{Method: r.Method, UserID: user, Audience: req.Audience, Authorized: ok})
	switch {
	case !ok:
		http.Error(w, `{"error":"unauthorized"}`, http.StatusUnauthorized)
		return
	case s.tokenStatus != 0:
		s.failLocked(w, s.tokenStatus)
		return
	case decodeErr != nil || !strings.HasPrefix(r.Header.Get("Content-Type"), "application/json"):
		http.Error(w, `{"error":"bad_request"}`, http.StatusBadRequest)
		return
	case req.Audience != broker.AudienceCommonly && req.Audience != broker.AudienceGitHub:
		http.Error(w, `{"error":"unknown_audience"}`, http.StatusBadRequest)
		return
	}
	// Every user may act in Commonly; other audiences need their connection.
	if req.Audience != broker.AudienceCommonly && s.connections[[2]string{user, req.Audience}] != broker.StatusActive {
		http.Error(w, `{"error":"not_connected"}`, http.StatusNotFound)
		return
	}
	// Random, as a real broker's: a token that spelt its audience would
	// share a word with the service it is for, and a scrubber redacting
	// every piece of it would redact that word in the service's answers.
	tok := "tok_" + random()
	s.issued = append(s.issued, Issued{Token: tok, UserID: user, Audience: req.Audience})
	writeJSON(w, map[string]string{"token": tok, "expiresAt": time.Now().Add(5 * time.Minute).UTC().Format(time.RFC3339)})
}

// fail answers a forced failure whose body carries a secret, as a careless
// broker might: a client that quotes bodies in its errors leaks it. A
// forced 200 is a malformed answer (the token is not a string).
func (s *Server) fail(w http.ResponseWriter, status int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.failLocked(w, status)
}

func (s *Server) failLocked(w http.ResponseWriter, status int) {
	leak := "tok_leak_" + random()
	s.issued = append(s.issued, Issued{Token: leak, Audience: "leak"})
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	if status == http.StatusOK {
		_, _ = w.Write([]byte(`{"token": 42, "connector": 42, "leak": "` + leak + `"}`))
		return
	}
	_, _ = w.Write([]byte(`{"error": "forced failure", "token": "` + leak + `"}`))
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

func random() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b) // crypto/rand.Read never fails
	return hex.EncodeToString(b)
}
