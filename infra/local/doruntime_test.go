package main

import (
	"context"
	"encoding/json"
	"net/http"
	"regexp"
	"testing"
	"time"

	"github.com/commonly/runtime/infra/awslocal/apigatewaylocal"
	"github.com/commonly/runtime/infra/localstack"
	"github.com/commonly/runtime/shared/runs"
)

// Issue 23: make run serves both engines. With no DO_RUNTIME_URL it
// starts the Durable Object runtime's stand-in; the demo runs a turn on
// each engine through a migration and its rollback; an install on the
// durable-object engine is served by the stand-in (its answer posted to
// the pod, its usage priced), and a failure there ends the run
// fallback_error, refunded.
func TestLocalStackServesBothEngines(t *testing.T) {
	s := startLocal(t, nil)
	out := s.Output()
	for _, want := range []string{
		`DO +durable object runtime: local stand-in at http://127\.0\.0\.1:\d+`,
		`in-progress +engine native, engineInEffect native -> turn on native: succeeded`,
		`done +engine native, engineInEffect durable-object -> turn on durable-object: succeeded, \d+ tokens, \$0\.0000[1-9]`,
		`rolled-back +engine native, engineInEffect native -> turn on native: succeeded`,
		`< \[durable object runtime, local stand-in\] agent demo-agent`,
	} {
		if !regexp.MustCompile(want).MatchString(out) {
			t.Errorf("make run's output does not show %s:\n%s", want, out)
		}
	}

	ctx := context.Background()
	admin, _ := apigatewaylocal.MintServiceToken(s.secret, apigatewaylocal.ServiceSubject, time.Now())
	user, _ := apigatewaylocal.MintToken(s.secret, "do-user", nil, time.Hour, time.Now())
	if status, body, err := localstack.Call(ctx, http.MethodPut, s.base+"/v1/installs/do-install", admin, nil,
		`{"userId":"do-user","podId":"do-pod","agentName":"old-agent","engine":"durable-object"}`); err != nil || status != http.StatusCreated {
		t.Fatalf("install: %d %s %v", status, body, err)
	}
	turn := func(msg string) runs.Run {
		t.Helper()
		status, body, err := localstack.Call(ctx, http.MethodPost, s.base+"/v1/installs/do-install/turns", user, map[string]string{"Prefer": "wait=20"}, mustJSON(map[string]string{"message": msg}))
		var run runs.Run
		if err != nil || status != http.StatusOK || json.Unmarshal(body, &run) != nil {
			t.Fatalf("turn %q: %d %s %v", msg, status, body, err)
		}
		return run
	}
	if run := turn("hello old runtime"); run.Engine != "durable-object" || run.Status != runs.StatusSucceeded || run.CostMicros <= 0 || len(run.Steps) != 1 || run.Steps[0].Estimated {
		t.Errorf("a durable-object turn: %+v", run)
	}
	if run := turn("please " + doFail); run.Status != runs.StatusFailed || run.ErrorKind != runs.ErrFallback || run.CostMicros != 0 {
		t.Errorf("a failing durable-object turn: %s %s %d", run.Status, run.ErrorKind, run.CostMicros)
	}
}
