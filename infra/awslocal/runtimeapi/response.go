package runtimeapi

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/textproto"
	"slices"
	"strconv"
	"strings"
)

// call is the invocation id names, if it is the one in flight and not
// yet answered; otherwise the Runtime API's refusal is written.
func (s *Server) call(w http.ResponseWriter, id string) *Call {
	s.mu.Lock()
	c, known := s.calls[id]
	s.mu.Unlock()
	if !known {
		renderError(w, http.StatusBadRequest, "InvalidRequestID", "Invalid request ID")
		return nil
	}
	if !c.answer() {
		renderError(w, http.StatusForbidden, "InvalidStateTransition", "the invocation was answered or has ended")
		return nil
	}
	return c
}

// response is POST /runtime/invocation/{id}/response. A chunked body is
// read off the connection itself, so that each chunk is recorded as it
// arrives (net/http's reader joins chunks that arrive together).
func (s *Server) response(w http.ResponseWriter, r *http.Request, id string) {
	if m := r.Header.Get(HeaderResponseMode); m != "" && m != "streaming" {
		renderError(w, http.StatusBadRequest, "InvalidFunctionResponseMode", "Lambda-Runtime-Function-Response-Mode must be streaming")
		return
	}
	c := s.call(w, id)
	if c == nil {
		return
	}
	o := &Outcome{Kind: KindResponse, Header: r.Header.Clone(), TransferEncoding: slices.Clone(r.TransferEncoding)}
	for name := range r.Trailer {
		o.DeclaredTrailers = append(o.DeclaredTrailers, name)
	}
	slices.Sort(o.DeclaredTrailers)
	if !slices.Contains(r.TransferEncoding, "chunked") {
		body, err := io.ReadAll(io.LimitReader(r.Body, MaxResponse+1))
		if err == nil && len(body) > MaxResponse {
			err = errors.New("the response is over Lambda's limit")
		}
		if len(body) > 0 {
			c.addChunk(body)
		}
		if err != nil {
			s.end(c, &Outcome{Kind: KindExited, ErrorType: "Runtime.ExitError", Err: fmt.Errorf("reading the response: %w", err)})
			renderError(w, http.StatusRequestEntityTooLarge, "RequestEntityTooLarge", err.Error())
			return
		}
		s.end(c, o)
		accepted(w)
		return
	}
	conn, rw, err := http.NewResponseController(w).Hijack()
	if err != nil {
		s.end(c, &Outcome{Kind: KindExited, ErrorType: "Runtime.ExitError", Err: err})
		return
	}
	defer conn.Close()
	trailer, err := readChunked(rw.Reader, c.addChunk)
	if err != nil {
		// The runtime went away mid-response: what arrived is kept.
		s.end(c, &Outcome{Kind: KindExited, Header: o.Header, TransferEncoding: o.TransferEncoding,
			DeclaredTrailers: o.DeclaredTrailers, ErrorType: "Runtime.ExitError", Err: fmt.Errorf("the response was cut: %w", err)})
		return
	}
	o.Trailer = trailer
	o.ErrorType = trailer.Get(HeaderErrorType)
	s.end(c, o)
	body := `{"status":"OK"}` + "\n"
	_, _ = fmt.Fprintf(rw, "HTTP/1.1 202 Accepted\r\nContent-Type: application/json\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s", len(body), body)
	_ = rw.Flush()
}

// readChunked reads an HTTP/1.1 chunked body (RFC 9112 §7.1), handing
// each chunk's data to onChunk as it is read, and returns the trailers.
func readChunked(br *bufio.Reader, onChunk func([]byte)) (http.Header, error) {
	total := 0
	tp := textproto.NewReader(br)
	for {
		line, err := tp.ReadLine()
		if err != nil {
			return nil, err
		}
		sizeText, _, _ := strings.Cut(line, ";")
		size, err := strconv.ParseUint(strings.TrimSpace(sizeText), 16, 63)
		if err != nil {
			return nil, fmt.Errorf("malformed chunk size %q", line)
		}
		if size == 0 {
			h, err := tp.ReadMIMEHeader()
			if err != nil && !(errors.Is(err, io.EOF) && len(h) == 0) {
				return nil, err
			}
			return http.Header(h), nil
		}
		if total += int(size); total > MaxResponse {
			return nil, errors.New("the response is over Lambda's limit")
		}
		data := make([]byte, size)
		if _, err := io.ReadFull(br, data); err != nil {
			return nil, err
		}
		if crlf, err := tp.ReadLine(); err != nil || crlf != "" {
			return nil, errors.New("malformed chunk end")
		}
		onChunk(data)
	}
}

// invocationError is POST /runtime/invocation/{id}/error.
func (s *Server) invocationError(w http.ResponseWriter, r *http.Request, id string) {
	c := s.call(w, id)
	if c == nil {
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, MaxResponse))
	if err != nil {
		s.end(c, &Outcome{Kind: KindExited, ErrorType: "Runtime.ExitError", Err: fmt.Errorf("reading the error: %w", err)})
		return
	}
	if len(body) > 0 {
		c.addChunk(body)
	}
	typ := r.Header.Get(HeaderErrorType)
	if typ == "" {
		typ = "Runtime.Unknown"
	}
	s.end(c, &Outcome{Kind: KindError, Header: r.Header.Clone(), TransferEncoding: slices.Clone(r.TransferEncoding), ErrorType: typ})
	accepted(w)
}

// initError is POST /runtime/init/error (and an extension's init or
// exit error): kept for InitErrors.
func (s *Server) initError(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	typ := r.Header.Get(HeaderErrorType)
	if typ == "" {
		typ = r.Header.Get("Lambda-Extension-Function-Error-Type")
	}
	s.mu.Lock()
	s.initErrs = append(s.initErrs, InitError{Type: typ, Body: body})
	s.mu.Unlock()
	accepted(w)
}
