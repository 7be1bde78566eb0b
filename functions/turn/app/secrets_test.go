package app_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/commonly/runtime/shared/llm/llmtest"
	"github.com/commonly/runtime/shared/runs"
	"github.com/commonly/runtime/shared/sandbox/e2b/e2btest"
)

// echoPieces are what an upstream may send back of a secret: a
// 10-character prefix (as the audit saw get through) and suffix, and
// URL-encoded and base64 copies, whole and inside a Basic credential.
func echoPieces(secret string) []string {
	return []string{
		secret[:10], secret[len(secret)-10:], url.QueryEscape(secret),
		base64.StdEncoding.EncodeToString([]byte(secret)),
		base64.StdEncoding.EncodeToString([]byte("user:" + secret)),
	}
}

// echo is an upstream's error text quoting every configured secret.
func echo(secrets []string) string {
	var b strings.Builder
	b.WriteString("upstream failure; credentials seen:")
	for _, s := range secrets {
		for _, p := range echoPieces(s) {
			b.WriteString(" [" + p + "]")
		}
	}
	return b.String()
}

// assertNoPieces fails if text holds any echoed piece of any secret.
func assertNoPieces(t *testing.T, where, text string, secrets []string) {
	t.Helper()
	for _, s := range secrets {
		for _, p := range echoPieces(s) {
			if strings.Contains(text, p) {
				t.Errorf("%s holds a piece of a secret: %q", where, p)
			}
		}
	}
}

// Issue 9, item 15: upstream error text never reaches the run record its
// owner reads (runs keep fixed words and a status or code), and reaches
// the log only scrubbed of every configured secret and of every piece of
// one, with upstreams that echo prefixes, suffixes, URL-encoded and base64
// copies of each key.
func TestUpstreamTextKeepsNoPieceOfASecret(t *testing.T) {
	fake := e2btest.Start(t)
	cases := []struct {
		name  string
		steps func(text string) []llmtest.Step
		env   map[string]string
		setup func(text string)
		kind  runs.ErrorKind
	}{
		{name: "the proxy's 5xx body", kind: runs.ErrLLM, steps: func(text string) []llmtest.Step {
			return []llmtest.Step{{Error: &llmtest.ErrorReply{Status: http.StatusBadGateway, Message: text, Type: text}}}
		}},
		{name: "the proxy's 4xx body", kind: runs.ErrLLM, steps: func(text string) []llmtest.Step {
			return []llmtest.Step{{Error: &llmtest.ErrorReply{Status: http.StatusBadRequest, Message: text}}}
		}},
		{name: "an unknown finish reason", kind: runs.ErrLLM, steps: func(text string) []llmtest.Step {
			return []llmtest.Step{llmtest.Text("partial").WithFinish(text[:60])}
		}},
		{name: "E2B's error on create", kind: runs.ErrSandbox, env: e2bEnv(fake),
			setup: func(text string) { fake.FailCreates(3, http.StatusInternalServerError, text) },
			steps: func(string) []llmtest.Step {
				return []llmtest.Step{llmtest.Calls(llmtest.Call("commonly_run_code", `{"language":"python","code":"print(1)"}`))}
			}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := newStackWith(t, c.env)
			secrets := append(configuredSecrets(s.cfg), s.broker.Secrets()...)
			text := echo(secrets)
			s.llm.Push(c.steps(text)...)
			if c.setup != nil {
				c.setup(text)
			}
			s.install(t, `{"userId":"user-1","podId":"pod-1","agentName":"scout","tools":["commonly_post_message","commonly_run_code"]}`)
			run := s.turn(t, "go")
			if run.Status != runs.StatusFailed || run.ErrorKind != c.kind {
				t.Fatalf("run = %s %s %q", run.Status, run.ErrorKind, run.ErrorMessage)
			}
			if strings.Contains(run.ErrorMessage, "credentials seen") {
				t.Errorf("upstream text reached the run: %q", run.ErrorMessage)
			}
			body, _ := json.Marshal(run)
			assertNoPieces(t, "the run", string(body), secrets)
			out, err := s.db.Scan(context.Background(), &dynamodb.ScanInput{TableName: aws.String(s.cfg.Tables.Runs)})
			if err != nil {
				t.Fatal(err)
			}
			stored, _ := json.Marshal(out.Items)
			assertNoPieces(t, "the runs table", string(stored), secrets)
			logs := s.logs.String()
			assertNoPieces(t, "the log", logs, secrets)
			if !strings.Contains(logs, "upstream failure") && c.name != "an unknown finish reason" {
				t.Errorf("the upstream's text is not in the log for the operator: %s", logs)
			}
		})
	}
}
