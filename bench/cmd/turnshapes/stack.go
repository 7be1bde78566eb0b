package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"syscall"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/commonly/runtime/bench/internal/shapes"
	"github.com/commonly/runtime/bench/internal/turnstack"
	"github.com/commonly/runtime/infra/awslocal/apigatewaylocal"
	"github.com/commonly/runtime/infra/localstack"
	"github.com/commonly/runtime/internal/dynamodblocal"
	"github.com/commonly/runtime/shared/llm/llmtest"
	"github.com/commonly/runtime/shared/sandbox/e2b/e2btest"
	"github.com/commonly/runtime/shared/tools/runcode"
	"github.com/commonly/runtime/shared/tools/search"
	"github.com/commonly/runtime/shared/tools/search/searchtest"
)

// The install the shapes' turns run on, and the fake Exa's key.
const (
	installID = "shapes-install"
	searchKey = "exa-bench-key"
)

// stack is the driver's side: the stand-ins and the two processes.
type stack struct {
	db     *dynamodblocal.Server
	plain  *dynamodb.Client // the driver's own reads
	pacer  *shapes.Pacer
	llm    *httptest.Server
	e2b    *e2btest.Fake
	search *searchtest.Server
	turn   *proc
	events *proc
	o      options
	api    apiClient
	seq    int
}

func startStack(ctx context.Context, o options) (st *stack, err error) {
	st = &stack{o: o}
	defer func() {
		if err != nil {
			st.close()
		}
	}()
	if st.db, err = dynamodblocal.StartWithTables(ctx, "127.0.0.1:0", turnstack.Tables); err != nil {
		return st, err
	}
	st.plain = st.db.Client()
	model := llmtest.NewServer(turnstack.APIKey)
	model.Respond(shapes.Respond)
	st.pacer = &shapes.Pacer{Model: model, TimeToFirst: o.ttft, Interval: o.interval}
	st.llm = httptest.NewServer(st.pacer)
	st.e2b = e2btest.Serve()
	st.e2b.OnExecute(shapes.Execute)
	st.search = searchtest.Serve("exa", searchKey)
	st.search.SetHits(shapes.Hits()...)

	args := []string{"-llm", st.llm.URL, "-dynamo", st.db.URL, "-shapes"}
	for k, v := range map[string]string{
		"STAGE": "bench", "SANDBOX": "e2b", "E2B_API_KEY": e2btest.DefaultAPIKey, "E2B_API_URL": st.e2b.URL, "E2B_SANDBOX_URL": st.e2b.URL,
		"SEARCH_PROVIDER": "exa", "SEARCH_API_KEY": searchKey, "SEARCH_API_URL": st.search.URL,
	} {
		args = append(args, "-env", k+"="+v)
	}
	if st.turn, err = startProc(ctx, o.turnproc, args...); err != nil {
		return st, fmt.Errorf("turn process: %w", err)
	}
	if st.events, err = startProc(ctx, o.eventsproc, "-dynamo", st.db.URL); err != nil {
		return st, fmt.Errorf("events process: %w", err)
	}
	if st.api, err = newAPIClient(st.turn.ready["api"], st.events.ready["url"]); err != nil {
		return st, err
	}
	return st, st.api.createInstall(ctx)
}

func (st *stack) close() {
	for _, p := range []*proc{st.events, st.turn} {
		if p != nil {
			p.stop()
		}
	}
	if st.search != nil {
		st.search.Close()
	}
	if st.e2b != nil {
		st.e2b.Close()
	}
	if st.llm != nil {
		st.llm.Close()
	}
	if st.db != nil {
		_ = st.db.Close()
	}
}

// proc is a process of the driver's, started with its ready line.
type proc struct {
	cmd    *exec.Cmd
	stderr *bytes.Buffer
	ready  map[string]string
}

// startProc starts bin with args and reads its first line, a JSON object
// of URLs.
func startProc(ctx context.Context, bin string, args ...string) (*proc, error) {
	p := &proc{cmd: exec.CommandContext(ctx, bin, args...), stderr: &bytes.Buffer{}}
	p.cmd.Stderr = p.stderr
	out, err := p.cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := p.cmd.Start(); err != nil {
		return nil, err
	}
	line, err := bufio.NewReader(out).ReadBytes('\n')
	if err != nil || json.Unmarshal(line, &p.ready) != nil {
		p.stop()
		return nil, fmt.Errorf("%s did not start: %v\n%s", bin, err, p.stderr.String())
	}
	return p, nil
}

func (p *proc) stop() {
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	_ = p.cmd.Wait()
}

// stats reads GET {stats}/stats into v.
func (p *proc) stats(ctx context.Context, v any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.ready["stats"]+"/stats", nil)
	if err != nil {
		return err
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	return json.NewDecoder(res.Body).Decode(v)
}

// apiClient is the frontend: the turn API and the events URL, one
// loopback keep-alive connection each.
type apiClient struct {
	api, events  string
	user, admin  string
	http, stream *http.Client
}

func newAPIClient(api, events string) (apiClient, error) {
	now := time.Now()
	user, err := apigatewaylocal.MintToken([]byte(turnstack.Secret), turnstack.UserID, nil, 24*time.Hour, now)
	if err != nil {
		return apiClient{}, err
	}
	admin, err := apigatewaylocal.MintServiceToken([]byte(turnstack.Secret), apigatewaylocal.ServiceSubject, now)
	if err != nil {
		return apiClient{}, err
	}
	return apiClient{api: api, events: events, user: user, admin: admin,
		http: &http.Client{Transport: &http.Transport{DisableCompression: true}}, stream: &http.Client{Transport: &http.Transport{DisableCompression: true}}}, nil
}

// createInstall makes the shapes' install: the native engine with the
// code tool, the web search and the context tool.
func (c apiClient) createInstall(ctx context.Context) error {
	body, _ := json.Marshal(map[string]any{
		"userId": turnstack.UserID, "podId": "shapes-pod", "agentName": "shapes-agent", "engine": "native",
		"tools": []string{runcode.Name, search.Name, shapes.ContextToolName},
	})
	status, b, err := c.do(ctx, http.MethodPut, "/v1/installs/"+installID, c.admin, nil, body)
	if err != nil {
		return err
	}
	if status != http.StatusCreated && status != http.StatusOK {
		return fmt.Errorf("create install: %d %s", status, b)
	}
	return nil
}

func (c apiClient) do(ctx context.Context, method, path, token string, headers map[string]string, body []byte) (int, []byte, error) {
	return localstack.CallWith(ctx, c.http, method, c.api+path, token, headers, string(body))
}
