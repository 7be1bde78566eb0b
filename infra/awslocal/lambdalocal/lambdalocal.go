// Package lambdalocal is the local stand-in for the Lambda Invoke API
// (REST JSON, POST /2015-03-31/functions/{name}/invocations) on loopback,
// which the real SDK client reaches through AWS_ENDPOINT_URL_LAMBDA. An
// asynchronous invocation (X-Amz-Invocation-Type: Event) of a known
// function is accepted with 202 and either queued, for the caller to take
// and run each as Lambda would, in an invocation of its own (Start;
// `make invoke`), or run at once in an invocation of its own, a goroutine
// with the function's timeout, retried as Lambda retries an asynchronous
// invocation (StartRunning; `make run`). Other functions are not found;
// other invocation types are refused.
package lambdalocal

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/lambda"

	"github.com/commonly/runtime/infra/awslocal/internal/loopback"
	"github.com/commonly/runtime/internal/awscalls"
)

// EndpointVar is the SDK's standard variable for Lambda's endpoint.
const EndpointVar = "AWS_ENDPOINT_URL_LAMBDA"

// maxAsyncPayload is Lambda's limit on an asynchronous invocation's payload.
const maxAsyncPayload = 256 * 1024

// Invocation is an Invoke of type Event that was accepted.
type Invocation struct {
	Function string
	Payload  []byte
}

// Server is a running stand-in.
type Server struct {
	URL    string
	names  []string // the known function's names (name, ARN)
	http   *loopback.Server
	mu     sync.Mutex
	queue  []Invocation
	calls  *awscalls.Recorder
	runner *runner // nil: invocations are queued
}

// RecordCalls records every Invoke served from now on in rec (Call
// "lambda" "Invoke" with the function as the path names it): how the RIE
// tests see a bootstrap's invocations of itself.
func (s *Server) RecordCalls(rec *awscalls.Recorder) {
	s.mu.Lock()
	s.calls = rec
	s.mu.Unlock()
}

// Start serves on a free loopback port; names are the names by which the
// one known function is invoked (its name, its ARN).
func Start(names ...string) (*Server, error) {
	s := &Server{names: names}
	srv, err := loopback.Serve("127.0.0.1:0", s)
	if err != nil {
		return nil, fmt.Errorf("lambda stand-in: %w", err)
	}
	s.http, s.URL = srv, srv.URL
	return s, nil
}

func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	rest, ok := strings.CutPrefix(r.URL.Path, "/2015-03-31/functions/")
	name, ok2 := strings.CutSuffix(rest, "/invocations")
	if r.Method != http.MethodPost || !ok || !ok2 {
		lambdaError(w, http.StatusBadRequest, "InvalidRequestContentException", "only Invoke is served by the local Lambda")
		return
	}
	s.mu.Lock()
	rec := s.calls
	s.mu.Unlock()
	if rec != nil {
		rec.Record(awscalls.Call{Service: "lambda", Operation: "Invoke", Resource: name})
	}
	if !slices.Contains(s.names, name) {
		lambdaError(w, http.StatusNotFound, "ResourceNotFoundException", "Function not found: "+name+" (the local Lambda runs one function)")
		return
	}
	if t := r.Header.Get("X-Amz-Invocation-Type"); t != "Event" {
		lambdaError(w, http.StatusBadRequest, "InvalidRequestContentException", "the local Lambda serves asynchronous (Event) invocations only, not "+t)
		return
	}
	payload, err := io.ReadAll(io.LimitReader(r.Body, maxAsyncPayload+1))
	if err != nil || len(payload) > maxAsyncPayload {
		lambdaError(w, http.StatusRequestEntityTooLarge, "RequestTooLargeException", "an asynchronous payload is at most 256 KB")
		return
	}
	inv := Invocation{Function: name, Payload: payload}
	if s.runner != nil {
		if !s.runner.start(inv) {
			lambdaError(w, http.StatusServiceUnavailable, "ServiceException", "the local Lambda is stopping")
			return
		}
	} else {
		s.mu.Lock()
		s.queue = append(s.queue, inv)
		s.mu.Unlock()
	}
	w.WriteHeader(http.StatusAccepted)
}

// Take returns the queued invocations and empties the queue.
func (s *Server) Take() []Invocation {
	s.mu.Lock()
	defer s.mu.Unlock()
	q := s.queue
	s.queue = nil
	return q
}

// Close stops the server; with StartRunning, it then cancels the
// invocations still running and waits for them to return.
func (s *Server) Close() error {
	err := s.http.Close()
	if s.runner != nil {
		s.runner.close()
	}
	return err
}

func lambdaError(w http.ResponseWriter, status int, typ, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Amzn-ErrorType", typ)
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]string{"Type": "User", "message": msg})
}

// Client is a real SDK client for the server, with dummy credentials
// (the stand-in checks no signature), as the other stand-ins' are.
func (s *Server) Client() *lambda.Client {
	return lambda.NewFromConfig(aws.Config{
		Region:      "us-east-1",
		Credentials: credentials.NewStaticCredentialsProvider("local", "local", ""),
	}, func(o *lambda.Options) { o.BaseEndpoint = aws.String(s.URL) })
}
