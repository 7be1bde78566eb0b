// Package loopback serves an http.Handler on a loopback port until
// Close: what every stand-in of infra/awslocal, the embedded DynamoDB and
// the local stack's own servers start with.
package loopback

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"
)

// Server is a handler being served.
type Server struct {
	URL    string
	srv    *http.Server
	unused unused
	done   chan error
}

// Serve listens on addr ("127.0.0.1:0" for any free port) and serves h.
func Serve(addr string, h http.Handler) (*Server, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("listen %s: %w", addr, err)
	}
	s := &Server{URL: "http://" + ln.Addr().String(), done: make(chan error, 1)}
	s.srv = &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second}
	s.unused.closeOnShutdown(s.srv)
	go func() { s.done <- s.srv.Serve(ln) }()
	return s, nil
}

// Close stops the server, letting requests in flight finish for up to
// two seconds, then cutting what still runs.
func (s *Server) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	err := s.srv.Shutdown(ctx)
	if errors.Is(err, context.DeadlineExceeded) {
		err = s.srv.Close()
	}
	if serr := <-s.done; serr != nil && !errors.Is(serr, http.ErrServerClosed) {
		err = errors.Join(err, serr)
	}
	return err
}
