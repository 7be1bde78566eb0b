package main

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"
)

// asyncInvocation is an Invoke of type Event that the function made.
type asyncInvocation struct {
	Function string
	Payload  []byte
}

// lambdaStandIn serves the Lambda Invoke API (REST JSON, POST
// /2015-03-31/functions/{name}/invocations) on loopback: an asynchronous
// invocation (X-Amz-Invocation-Type: Event) of the function under test is
// accepted with 202 and queued, and the session runs it after the
// invocation that made it, as Lambda would run it in its own invocation.
// Other functions are not found; other invocation types are refused.
type lambdaStandIn struct {
	URL   string
	names []string // the function's names (id, ARN)
	srv   *http.Server
	done  chan error
	mu    sync.Mutex
	queue []asyncInvocation
}

func startLambdaStandIn(names []string) (*lambdaStandIn, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	l := &lambdaStandIn{URL: "http://" + ln.Addr().String(), names: names, done: make(chan error, 1)}
	l.srv = &http.Server{Handler: l, ReadHeaderTimeout: 5 * time.Second}
	go func() { l.done <- l.srv.Serve(ln) }()
	return l, nil
}

func (l *lambdaStandIn) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	rest, ok := strings.CutPrefix(r.URL.Path, "/2015-03-31/functions/")
	name, ok2 := strings.CutSuffix(rest, "/invocations")
	if r.Method != http.MethodPost || !ok || !ok2 {
		lambdaError(w, http.StatusBadRequest, "InvalidRequestContentException", "only Invoke is served by make invoke")
		return
	}
	known := false
	for _, n := range l.names {
		known = known || name == n
	}
	if !known {
		lambdaError(w, http.StatusNotFound, "ResourceNotFoundException", "Function not found: "+name+" (make invoke runs one function)")
		return
	}
	if t := r.Header.Get("X-Amz-Invocation-Type"); t != "Event" {
		lambdaError(w, http.StatusBadRequest, "InvalidRequestContentException", "make invoke serves asynchronous (Event) invocations only, not "+t)
		return
	}
	payload, err := io.ReadAll(io.LimitReader(r.Body, 256*1024+1))
	if err != nil || len(payload) > 256*1024 {
		lambdaError(w, http.StatusRequestEntityTooLarge, "RequestTooLargeException", "an asynchronous payload is at most 256 KB")
		return
	}
	l.mu.Lock()
	l.queue = append(l.queue, asyncInvocation{Function: name, Payload: payload})
	l.mu.Unlock()
	w.WriteHeader(http.StatusAccepted)
}

// take returns the queued invocations and empties the queue.
func (l *lambdaStandIn) take() []asyncInvocation {
	l.mu.Lock()
	defer l.mu.Unlock()
	q := l.queue
	l.queue = nil
	return q
}

func (l *lambdaStandIn) close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	err := l.srv.Shutdown(ctx)
	if serr := <-l.done; serr != nil && !errors.Is(serr, http.ErrServerClosed) {
		err = errors.Join(err, serr)
	}
	return err
}

func lambdaError(w http.ResponseWriter, status int, typ, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Amzn-ErrorType", typ)
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]string{"Type": "User", "message": msg})
}
