// Package apigatewaylocal is the local stand-in for API Gateway (HTTP API) with
// its JWT authorizer: it turns HTTP requests into the
// events.APIGatewayV2HTTPRequest the turn function receives in AWS, with
// the claims of a valid HS256 token, and the function's responses back into
// HTTP. The local stack and the benchmarks serve the API through it.
package apigatewaylocal

import (
	"context"
	"encoding/base64"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"regexp"
	"strings"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/aws/aws-lambda-go/events"

	eventshandler "github.com/commonly/runtime/functions/events/handler"
	"github.com/commonly/runtime/functions/turn/handler"
)

// maxLocalBody mirrors API Gateway's payload limit.
const maxLocalBody = 10 << 20

// Gateway is an http.Handler in front of a turn function handler.
type Gateway struct {
	// Secret verifies HS256 tokens.
	Secret []byte
	// Invoke is the function's handler.
	Invoke func(context.Context, events.APIGatewayV2HTTPRequest) events.APIGatewayV2HTTPResponse
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// Log receives rejected tokens; nil discards.
	Log *slog.Logger
	// Events, when set, serves GET /v1/runs/{runId}/events: in AWS the
	// events function's URL (RESPONSE_STREAM), which checks the token
	// itself, beside the HTTP API that cannot stream; here on the same
	// address, passed through unbuffered.
	Events http.Handler
	// Access, when set, gets one line for each request served: method,
	// path, status, the run it names and the time it took (make run).
	Access io.Writer
	seq    atomic.Int64
}

func (g *Gateway) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if _, ok := eventshandler.RunID(r.URL.Path); ok && g.Events != nil {
		if g.Access != nil {
			defer g.access(r, time.Now(), http.StatusOK, nil)
		}
		g.Events.ServeHTTP(w, r)
		return
	}
	if g.Access != nil {
		// The status and body are known once served.
		rec := &accessRecorder{ResponseWriter: w}
		defer func(start time.Time) { g.access(r, start, rec.status, rec.body) }(time.Now())
		w = rec
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, maxLocalBody+1))
	if err != nil || len(body) > maxLocalBody {
		http.Error(w, `{"message":"Request Entity Too Large"}`, http.StatusRequestEntityTooLarge)
		return
	}
	ev := g.event(r, body)
	resp := g.Invoke(r.Context(), ev)
	for k, v := range resp.Headers {
		w.Header().Set(k, v)
	}
	w.Header().Set("Apigw-Requestid", ev.RequestContext.RequestID)
	out := []byte(resp.Body)
	if resp.IsBase64Encoded {
		if out, err = base64.StdEncoding.DecodeString(resp.Body); err != nil {
			http.Error(w, `{"message":"Internal Server Error"}`, http.StatusBadGateway)
			return
		}
	}
	w.WriteHeader(resp.StatusCode)
	_, _ = w.Write(out)
}

// accessRecorder keeps a response's status and the start of its body,
// for the access line.
type accessRecorder struct {
	http.ResponseWriter
	status int
	body   []byte
}

func (a *accessRecorder) WriteHeader(status int) {
	a.status = status
	a.ResponseWriter.WriteHeader(status)
}

func (a *accessRecorder) Write(b []byte) (int, error) {
	if a.status == 0 {
		a.status = http.StatusOK
	}
	if len(a.body) < 512 {
		a.body = append(a.body, b[:min(len(b), 512-len(a.body))]...)
	}
	return a.ResponseWriter.Write(b)
}

// runIDIn finds the run a request names: in its path, or the "runId" of
// its answer.
var runIDIn = regexp.MustCompile(`\b(run_[0-9a-f]{16,})\b`)

// access writes one request's line: method, path, status, run, time.
func (g *Gateway) access(r *http.Request, start time.Time, status int, body []byte) {
	run := "-"
	if m := runIDIn.FindSubmatch(append([]byte(r.URL.Path+" "), body...)); m != nil {
		run = string(m[1])
	}
	fmt.Fprintf(g.Access, "%s %s %s %d %s %.1fms\n", time.Now().Format("15:04:05"), r.Method, r.URL.Path, status, run,
		float64(time.Since(start).Microseconds())/1e3)
}

func (g *Gateway) event(r *http.Request, body []byte) events.APIGatewayV2HTTPRequest {
	now := time.Now()
	if g.Now != nil {
		now = g.Now()
	}
	headers := map[string]string{}
	for k, vs := range r.Header {
		headers[strings.ToLower(k)] = strings.Join(vs, ",")
	}
	routeKey, params, ok, _ := handler.MatchRoute(r.Method, r.URL.Path)
	if !ok {
		routeKey = "$default"
	}
	host, _, _ := net.SplitHostPort(r.RemoteAddr)
	ev := events.APIGatewayV2HTTPRequest{
		Version: "2.0", RouteKey: routeKey, RawPath: r.URL.Path, RawQueryString: r.URL.RawQuery,
		Headers: headers, PathParameters: params,
		RequestContext: events.APIGatewayV2HTTPRequestContext{
			AccountID: "000000000000", APIID: "local", Stage: "$default", RouteKey: routeKey,
			RequestID: fmt.Sprintf("local-%d-%d", now.UnixMilli(), g.seq.Add(1)),
			Time:      now.UTC().Format("02/Jan/2006:15:04:05 -0700"), TimeEpoch: now.UnixMilli(),
			HTTP: events.APIGatewayV2HTTPRequestContextHTTPDescription{
				Method: r.Method, Path: r.URL.Path, Protocol: r.Proto, SourceIP: host, UserAgent: r.UserAgent(),
			},
		},
	}
	if r.URL.RawQuery != "" {
		ev.QueryStringParameters = map[string]string{}
		for k, vs := range r.URL.Query() {
			ev.QueryStringParameters[k] = strings.Join(vs, ",")
		}
	}
	if utf8.Valid(body) {
		ev.Body = string(body)
	} else {
		ev.Body, ev.IsBase64Encoded = base64.StdEncoding.EncodeToString(body), true
	}
	// Like the JWT authorizer: claims of a valid token only. A request
	// without one reaches the function with no identity, which answers 401.
	if claims, err := verifyClaims(g.Secret, r.Header.Get("Authorization"), now); err == nil {
		ev.RequestContext.Authorizer = &events.APIGatewayV2HTTPRequestContextAuthorizerDescription{
			JWT: &events.APIGatewayV2HTTPRequestContextAuthorizerJWTDescription{Claims: claims, Scopes: strings.Fields(claims["scope"])},
		}
	} else if r.Header.Get("Authorization") != "" && g.Log != nil {
		g.Log.Info("rejected token", "requestId", ev.RequestContext.RequestID, "reason", err.Error())
	}
	return ev
}
