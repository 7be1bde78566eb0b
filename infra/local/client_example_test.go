package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/commonly/runtime/api/apitest"
	"github.com/commonly/runtime/infra/awslocal/apigatewaylocal"
	"github.com/commonly/runtime/infra/localstack"
)

// TestClientExampleAgainstTheLocalStack runs the TypeScript example client
// (api/client-example, built by `make api`) with node against the local
// stack's API: it creates a turn with an Idempotency-Key, waits for it and
// reads the usage, through the gateway, the JWT check and the real handler.
func TestClientExampleAgainstTheLocalStack(t *testing.T) {
	dir, _ := filepath.Abs(filepath.Join("..", "..", "api", "client-example"))
	smoke := filepath.Join(dir, "dist", "smoke.js")
	if _, err := os.Stat(smoke); err != nil {
		t.Skip("`make api` builds api/client-example/dist (make test runs it first)")
	}
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("no node")
	}
	ctx := context.Background()
	env := localEnv(func(string) string { return "" })
	secret := []byte("client-example-secret")
	// What the client sends and gets is checked against the document too;
	// the events route's first connection is cut after three events: the
	// client must resume with Last-Event-ID.
	var cut *cutOnce
	st, err := localstack.Start(ctx, localstack.Config{Env: env, Pods: localstack.NewPods(), Functions: []localstack.Function{localstack.Turn, localstack.Events}, JWTSecret: secret,
		Faults: localstack.Faults{
			API: func(next localstack.APIHandler) localstack.APIHandler {
				return func(ctx context.Context, ev events.APIGatewayV2HTTPRequest) events.APIGatewayV2HTTPResponse {
					resp := next(ctx, ev)
					apitest.Check(t, ev, resp)
					return resp
				}
			},
			Events: func(h http.Handler) http.Handler { cut = &cutOnce{h: h, after: 3}; return cut },
		}})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	api := struct{ URL string }{st.APIURL}

	admin, _ := apigatewaylocal.MintServiceToken(secret, apigatewaylocal.ServiceSubject, time.Now())
	status, body, err := localstack.Call(ctx, "PUT", api.URL+"/v1/installs/demo-install", admin, nil, demoInstallBody())
	if err != nil || status != 201 {
		t.Fatalf("create install: %d %s %v", status, body, err)
	}
	user, _ := apigatewaylocal.MintToken(secret, "demo-user", nil, time.Hour, time.Now())
	cmd := exec.CommandContext(ctx, node, smoke, api.URL, user)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("node dist/smoke.js: %v\n%s", err, out)
	}
	t.Logf("%s", out)
	if got := string(out); !strings.Contains(got, "[offline model]") || !strings.Contains(got, "1/30 turns today") {
		t.Errorf("the example printed:\n%s", got)
	}
	// watchRun: every event once, in order, across the cut, ending with
	// run.finished; the offline model's answer streamed in text.delta
	// events; the second request resumed after the third event.
	want := regexp.MustCompile(`events: 1 run.started, 2 model.started, 3 text.delta, (\d+ text.delta, )*(\d+) model.finished, (\d+) run.finished \(succeeded, `)
	if m := want.FindStringSubmatch(string(out)); m == nil || m[3] != fmt.Sprint(mustAtoi(t, m[2])+1) {
		t.Errorf("watchRun saw:\n%s\nwant %s", out, want)
	}
	if got := cut.lastEventIDs(); len(got) < 2 || got[0] != "" || got[1] != "3" {
		t.Errorf("Last-Event-ID of the event requests: %q", got)
	}
}

// cutOnce serves the events route and cuts its first stream after `after`
// events, as a dropped connection would.
type cutOnce struct {
	h     http.Handler
	after int
	mu    sync.Mutex
	ids   []string
}

func (c *cutOnce) lastEventIDs() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.ids)
}

func (c *cutOnce) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	c.mu.Lock()
	first := len(c.ids) == 0
	c.ids = append(c.ids, r.Header.Get("Last-Event-ID"))
	c.mu.Unlock()
	if !first {
		c.h.ServeHTTP(w, r)
		return
	}
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	cw := &countingWriter{ResponseWriter: w, left: c.after, cancel: cancel}
	c.h.ServeHTTP(cw, r.WithContext(ctx))
	panic(http.ErrAbortHandler) // the connection drops
}

// countingWriter passes events through until `left` are written, then
// stops the stream.
type countingWriter struct {
	http.ResponseWriter
	left   int
	cancel func()
}

func (w *countingWriter) Write(b []byte) (int, error) {
	if w.left <= 0 {
		w.cancel()
		return 0, errors.New("cut")
	}
	if strings.HasPrefix(string(b), "id: ") {
		w.left--
	}
	n, err := w.ResponseWriter.Write(b)
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
	return n, err
}

func mustAtoi(t *testing.T, s string) int {
	t.Helper()
	n, err := strconv.Atoi(s)
	if err != nil {
		t.Fatal(err)
	}
	return n
}
