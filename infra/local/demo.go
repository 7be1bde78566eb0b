package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/commonly/runtime/functions/turn/app"
	"github.com/commonly/runtime/infra/awslocal/apigatewaylocal"
	"github.com/commonly/runtime/infra/localstack"
	"github.com/commonly/runtime/shared/money"
	"github.com/commonly/runtime/shared/runs"
	"github.com/commonly/runtime/shared/tools/pod"
	"github.com/commonly/runtime/shared/tools/runcode"
	"github.com/commonly/runtime/shared/tools/search"
)

const (
	demoInstall = "demo-install"
	demoUser    = "demo-user"
)

// demoTools are what the demo install offers: code execution, which is
// opt-in per install (an install without commonly_run_code in its list
// runs no code), the pod tools and web search (without SEARCH_API_KEY it
// is not configured: the run's unavailableTools says so).
var demoTools = append(append([]string{runcode.Name}, pod.Names...), search.Name)

// demoInstallBody is the demo install's PUT body.
func demoInstallBody() string {
	return mustJSON(map[string]any{"userId": demoUser, "podId": "demo-pod", "agentName": "demo-agent", "tools": demoTools})
}

// demoMessage exercises the native loop end to end: the offline model
// runs the code block through commonly_run_code in the local sandbox.
const demoMessage = "Hello! What is the sum of the squares of 1..10?\n\n```python\nprint(sum(i * i for i in range(1, 11)))\n```"

// demo creates the demo install through the API, runs one turn through
// the API and prints its transcript, usage and cost, and how to call it.
func demo(ctx context.Context, base string, secret []byte, cfg app.Config, pods *localstack.Pods, tr trace, out io.Writer) error {
	now := time.Now()
	admin, err := apigatewaylocal.MintServiceToken(secret, apigatewaylocal.ServiceSubject, now)
	if err != nil {
		return err
	}
	user, err := apigatewaylocal.MintToken(secret, demoUser, nil, 24*time.Hour, now)
	if err != nil {
		return err
	}
	status, body, err := localstack.Call(ctx, http.MethodPut, base+"/v1/installs/"+demoInstall, admin, nil, demoInstallBody())
	if err != nil {
		return err
	}
	if status != http.StatusCreated && status != http.StatusOK {
		return fmt.Errorf("create demo install: %d %s", status, body)
	}
	fmt.Fprintf(out, "Demo install %q created for user %q (engine %s), with the tools\n  %s\n(code execution is opt-in: only an install that lists %s runs code).\n\n",
		demoInstall, demoUser, cfg.DefaultEngine, strings.Join(demoTools, ", "), runcode.Name)

	fmt.Fprintln(out, "Demo turn: POST /v1/installs/demo-install/turns, then its events as they happen (GET /v1/runs/{runId}/events)")
	fmt.Fprintln(out, indent(demoMessage, "  > "))
	status, body, err = localstack.Call(ctx, http.MethodPost, base+"/v1/installs/"+demoInstall+"/turns", user,
		map[string]string{"Idempotency-Key": fmt.Sprintf("demo-%d", now.UnixNano())},
		mustJSON(map[string]string{"message": demoMessage, "trigger": "demo"}))
	if err != nil {
		return err
	}
	var run runs.Run
	if (status != http.StatusOK && status != http.StatusAccepted) || json.Unmarshal(body, &run) != nil {
		fmt.Fprintf(out, "  answer %d: %s\n", status, body)
	} else {
		if err := printEvents(ctx, base, user, run.RunID, out); err != nil {
			fmt.Fprintf(out, "  events: %v\n", err)
		}
		if status, body, err = localstack.Call(ctx, http.MethodGet, base+"/v1/runs/"+run.RunID, user, nil, ""); err == nil && status == http.StatusOK && json.Unmarshal(body, &run) == nil {
			printRun(out, &run)
			printTrace(ctx, out, tr, &run)
		}
	}
	if pods != nil {
		fmt.Fprintln(out, "\n  pod demo-pod now reads:")
		for _, m := range pods.Messages("demo-pod") {
			fmt.Fprintln(out, indent(m.Author+": "+m.Content, "    | "))
		}
	}
	if body, err := countedUsage(ctx, base, user, run.CostMicros); err == nil {
		fmt.Fprintf(out, "\nUsage today (GET /v1/me/usage, once the alarm function has counted the run from the stream): %s\n", bytes.TrimSpace(body))
	}
	if cfg.Fallback {
		if err := demoEngines(ctx, base, admin, user, out); err != nil {
			fmt.Fprintln(out, "  the engines' demo failed:", err)
		}
	}
	if cfg.SpendCap > 0 {
		status, body, err = localstack.Call(ctx, http.MethodPost, base+"/v1/installs/"+demoInstall+"/turns", user, nil,
			mustJSON(map[string]string{"message": "One more, please.", "trigger": "demo"}))
		if err == nil {
			fmt.Fprintf(out, "\nA second turn with DAILY_SPEND_CAP_USD=%s: %d %s\n", cfg.SpendCap.USD(), status, bytes.TrimSpace(body))
		}
	}

	fmt.Fprintf(out, "\nTry it (token valid 24 h):\n\n  TOKEN=%s\n\n", user)
	fmt.Fprintf(out, "  curl -s -X POST %s/v1/installs/%s/turns \\\n    -H \"Authorization: Bearer $TOKEN\" -H 'Content-Type: application/json' -H 'Prefer: wait=20' \\\n    -d '{\"message\":\"Squares, please:\\n```js\\nconsole.log([1,2,3].map(x => x*x))\\n```\"}'\n\n", base, demoInstall)
	fmt.Fprintf(out, "  curl -s %s/v1/me/usage -H \"Authorization: Bearer $TOKEN\"\n", base)
	fmt.Fprintf(out, "  curl -sN %s/v1/runs/RUN_ID/events -H \"Authorization: Bearer $TOKEN\"   (add -H 'Last-Event-ID: N' to resume)\n", base)
	fmt.Fprintf(out, "\nA token for any user: go run ./infra/local token USER_ID   (add \"admin\" for the service scope)\n")
	return nil
}

func printRun(out io.Writer, r *runs.Run) {
	fmt.Fprintf(out, "\n  run %s: %s", r.RunID, r.Status)
	if r.ErrorKind != "" {
		fmt.Fprintf(out, " (%s: %s)", r.ErrorKind, r.ErrorMessage)
	}
	fmt.Fprintln(out)
	// Which model and sandbox served it, as the run records them: here the
	// local stack's own, in AWS LiteLLM's and E2B's.
	fmt.Fprintf(out, "  engine %s  model %s  sandbox %s\n", r.Engine, orNone(r.Model), orNone(r.Sandbox))
	for _, s := range r.Steps {
		fmt.Fprintf(out, "  step %d  model %s  tokens %d in (%d cached) / %d out  %d ms  %s\n",
			s.Index+1, s.Model, s.PromptTokens, s.CachedPromptTokens, s.CompletionTokens, s.ElapsedMs, s.CostMicros)
		for _, tc := range s.ToolCalls {
			res := "ok"
			if !tc.OK {
				res = "error: " + tc.Error
			}
			fmt.Fprintf(out, "    tool %s %s -> %s (%d ms)\n", tc.Name, oneLine(tc.Args, 100), res, tc.ElapsedMs)
			if c := tc.CodeRun; c != nil {
				fmt.Fprintf(out, "      ran %s, %d chars, exit %s, %d ms\n", c.Language, c.CodeChars, c.ExitKind, c.DurationMs)
			}
		}
	}
	if len(r.UnavailableTools) > 0 {
		fmt.Fprintf(out, "  not configured here, so not offered: %s\n", strings.Join(r.UnavailableTools, ", "))
	}
	if r.FinalMessage != "" {
		fmt.Fprintln(out, "  final message:")
		fmt.Fprintln(out, indent(r.FinalMessage, "  < "))
	}
	fmt.Fprintf(out, "  tokens: %d prompt (%d cached), %d completion\n", r.Tokens.Prompt, r.Tokens.CachedPrompt, r.Tokens.Completion)
	fmt.Fprintf(out, "  cost:   %s (model %s, sandbox %s, search %s; prices %s)\n",
		r.CostMicros, r.Cost.ModelMicros, r.Cost.SandboxMicros, r.Cost.SearchMicros, r.Cost.PriceVersion)
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

func indent(s, prefix string) string {
	return prefix + strings.ReplaceAll(strings.TrimRight(s, "\n"), "\n", "\n"+prefix)
}

func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}

// countedUsage reads the demo user's usage until the alarm function has
// counted the run's cost from the runs stream (milliseconds locally), or
// for at most five seconds.
func countedUsage(ctx context.Context, base, token string, cost money.Micros) ([]byte, error) {
	deadline := time.Now().Add(5 * time.Second)
	for {
		status, body, err := localstack.Call(ctx, http.MethodGet, base+"/v1/me/usage", token, nil, "")
		if err != nil || status != http.StatusOK {
			return body, fmt.Errorf("usage: %d %v", status, err)
		}
		var u struct {
			CostMicros money.Micros `json:"costMicros"`
		}
		if json.Unmarshal(body, &u) != nil || u.CostMicros >= cost || time.Now().After(deadline) {
			return body, nil
		}
		select {
		case <-ctx.Done():
			return body, ctx.Err()
		case <-time.After(25 * time.Millisecond):
		}
	}
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}
