package llmtest

// Respond makes the server answer each valid request with fn's step
// instead of the next step of the script: a load test's many concurrent
// turns each get the answer their own conversation calls for (their
// message, the tool results so far), whatever order they arrive in. fn runs under the server's lock: it
// must not call the server. nil goes back to the script.
func (s *Server) Respond(fn func(ChatRequest) Step) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.respond = fn
}

// Responded is the number of requests Respond's function answered.
func (s *Server) Responded() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.responded
}
