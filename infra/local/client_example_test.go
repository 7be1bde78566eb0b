package main

import (
	"context"
	"io"
	"log/slog"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/commonly/runtime/api/apitest"
	"github.com/commonly/runtime/functions/turn/app"
	"github.com/commonly/runtime/infra/awslocal/apigatewaylocal"
	"github.com/commonly/runtime/infra/awslocal/dynamodblocal"
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
	pods := newBackend()
	podsURL, podsSrv, err := pods.serve()
	if err != nil {
		t.Fatal(err)
	}
	defer podsSrv.Close()
	env := localEnv(func(string) string { return "" })
	env["COMMONLY_API_URL"], env["BROKER_URL"], env["BROKER_TOKEN"] = podsURL, podsURL, pods.serviceToken
	cfg, err := app.LoadConfig(func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	db, err := dynamodblocal.StartWithTables(ctx, "127.0.0.1:0", cfg.Tables)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	built, lam, err := buildTurn(ctx, cfg, app.Deps{Dynamo: db.Client(), Log: log})
	if err != nil {
		t.Fatal(err)
	}
	if lam != nil {
		defer lam.Close()
	}
	secret := []byte("client-example-secret")
	// What the client sends and gets is checked against the document too.
	invoke := func(ctx context.Context, ev events.APIGatewayV2HTTPRequest) events.APIGatewayV2HTTPResponse {
		resp := built.Handler.HandleHTTP(ctx, ev)
		apitest.Check(t, ev, resp)
		return resp
	}
	api := httptest.NewServer(&apigatewaylocal.Gateway{Secret: secret, Invoke: invoke, Log: log})
	defer api.Close()

	admin, _ := apigatewaylocal.MintServiceToken(secret, apigatewaylocal.ServiceSubject, time.Now())
	status, body, err := call(ctx, "PUT", api.URL+"/v1/installs/demo-install", admin, nil, demoInstallBody())
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
}
