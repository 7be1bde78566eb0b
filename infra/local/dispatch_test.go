package main

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/commonly/runtime/infra/awslocal/apigatewaylocal"
	"github.com/commonly/runtime/infra/localstack"
	"github.com/commonly/runtime/shared/runs"
)

// Issue 23: the local stack dispatches as AWS does. A POST …/turns
// without Prefer: wait answers 202 with the run queued at once, and the
// turn runs in an invocation of its own through the Lambda stand-in, to
// a final status the client reads at the Location; with Prefer: wait=N
// the same stack answers 200 with the finished run.
func TestLocalStackDispatchesAsynchronously(t *testing.T) {
	s := startLocal(t, nil)
	if out := s.Output(); !strings.Contains(out, "dispatch  each turn an asynchronous Invoke") {
		t.Errorf("the banner does not say how turns are dispatched:\n%s", out)
	}
	ctx := context.Background()
	user, _ := apigatewaylocal.MintToken(s.secret, demoUser, nil, time.Hour, time.Now())

	status, body, err := localstack.Call(ctx, http.MethodPost, s.base+"/v1/installs/"+demoInstall+"/turns", user,
		map[string]string{"Idempotency-Key": "async-1"}, mustJSON(map[string]string{"message": "```python\nprint(6*7)\n```"}))
	var run runs.Run
	if err != nil || status != http.StatusAccepted || json.Unmarshal(body, &run) != nil || run.Status != runs.StatusQueued {
		t.Fatalf("without Prefer: %d %s %v, want 202 and a queued run", status, body, err)
	}
	deadline := time.Now().Add(60 * time.Second)
	for run.Status != runs.StatusSucceeded {
		if run.Status.Final() || time.Now().After(deadline) {
			t.Fatalf("the dispatched run ended %s", run.Status)
		}
		time.Sleep(50 * time.Millisecond)
		status, body, err = localstack.Call(ctx, http.MethodGet, s.base+"/v1/runs/"+run.RunID, user, nil, "")
		if err != nil || status != http.StatusOK || json.Unmarshal(body, &run) != nil {
			t.Fatalf("GET the run: %d %s %v", status, body, err)
		}
	}
	if !strings.Contains(run.FinalMessage, "42") {
		t.Errorf("the run's answer: %q\n%s", run.FinalMessage, s.Output())
	}

	status, body, err = localstack.Call(ctx, http.MethodPost, s.base+"/v1/installs/"+demoInstall+"/turns", user,
		map[string]string{"Idempotency-Key": "async-2", "Prefer": "wait=20"}, mustJSON(map[string]string{"message": "hello"}))
	if err != nil || status != http.StatusOK || json.Unmarshal(body, &run) != nil || run.Status != runs.StatusSucceeded {
		t.Fatalf("with Prefer: wait=20: %d %s %v, want 200 and the finished run", status, body, err)
	}
}
