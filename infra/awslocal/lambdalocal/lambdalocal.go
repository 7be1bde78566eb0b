// Package lambdalocal is the local stand-in for the Lambda Invoke API
// (REST JSON, POST /2015-03-31/functions/{name}/invocations) on loopback,
// which the real SDK client reaches through AWS_ENDPOINT_URL_LAMBDA. An
// asynchronous invocation (X-Amz-Invocation-Type: Event) of a known
// function is accepted with 202 and run at once in an invocation of its
// own, a goroutine with the function's timeout, retried as Lambda retries
// an asynchronous invocation, a crash or a timeout alike (Start; the
// local stack gives it the function's entry point, in process or its
// bootstrap under the emulator), or kept for a test to take
// (StartTaking). Other functions are not found; other invocation types
// are refused.
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

	"github.com/commonly/runtime/internal/awscalls"
	"github.com/commonly/runtime/internal/loopback"
)

// EndpointVar is the SDK's standard variable for Lambda's endpoint.
const EndpointVar = "AWS_ENDPOINT_URL_LAMBDA"

// maxAsyncPayload is Lambda's limit on an asynchronous invocation's payload.
const maxAsyncPayload = 256 * 1024

// Server is a running stand-in.
type Server struct {
	URL    string
	names  []string // the known function's names (name, ARN)
	http   *loopback.Server
	mu     sync.Mutex
	calls  *awscalls.Recorder
	runner *runner
	taken  *taken // StartTaking's
}

// RecordCalls records every Invoke served from now on in rec (Call
// "lambda" "Invoke" with the function as the path names it): how the RIE
// tests see a bootstrap's invocations of itself.
func (s *Server) RecordCalls(rec *awscalls.Recorder) {
	s.mu.Lock()
	s.calls = rec
	s.mu.Unlock()
}

// serve serves s on a free loopback port.
func (s *Server) serve() error {
	srv, err := loopback.Serve("127.0.0.1:0", s)
	if err != nil {
		return fmt.Errorf("lambda stand-in: %w", err)
	}
	s.http, s.URL = srv, srv.URL
	return nil
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
	if !s.runner.start(invocation{function: name, payload: payload}) {
		lambdaError(w, http.StatusServiceUnavailable, "ServiceException", "the local Lambda is stopping")
		return
	}
	w.WriteHeader(http.StatusAccepted)
}

// Close stops the server, then cancels the invocations still running
// and waits for them to return.
func (s *Server) Close() error {
	err := s.http.Close()
	s.runner.close()
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
