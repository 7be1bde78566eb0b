package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/commonly/runtime/bench/internal/childproc"
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
	turn   *childproc.Proc
	events *childproc.Proc
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
	if st.turn, err = childproc.Start(ctx, o.turnproc, args...); err != nil {
		return st, fmt.Errorf("turn process: %w", err)
	}
	if st.events, err = childproc.Start(ctx, o.eventsproc, "-dynamo", st.db.URL); err != nil {
		return st, fmt.Errorf("events process: %w", err)
	}
	if st.api, err = newAPIClient(st.turn.Ready["api"], st.events.Ready["url"]); err != nil {
		return st, err
	}
	return st, st.api.createInstall(ctx)
}

func (st *stack) close() {
	for _, p := range []*childproc.Proc{st.events, st.turn} {
		if p != nil {
			p.Stop()
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
