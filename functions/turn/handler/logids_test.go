package handler_test

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/lambdacontext"
)

// Issue 23: a turn's log line carries requestId once. In Lambda the
// function logs through lambdacontext's handler, which adds Lambda's
// request id as requestId to every line; the handler names API Gateway's
// id apiRequestId. The lines are written by that handler as in AWS (it
// writes to os.Stdout, taken here for the test).
func TestLogLinesCarryRequestIDOnce(t *testing.T) {
	path := filepath.Join(t.TempDir(), "stdout")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	stdout := os.Stdout
	os.Stdout = f
	h := lambdacontext.NewLogHandler()
	os.Stdout = stdout

	e := newEnv(t, envOpts{logHandler: h})
	e.install(t, "inst-log", "user-1", nil)
	ev := withHeader(withSub(withBody(withParam(event(t, "submit-turn.json"), "installId", "inst-log"), map[string]string{"message": "hi"}), "user-1"), "idempotency-key", "log-ids-1")
	ctx := lambdacontext.NewContext(context.Background(), &lambdacontext.LambdaContext{AwsRequestID: "lambda-req-1"})
	if resp := e.h.HandleHTTP(ctx, ev); resp.StatusCode != 202 && resp.StatusCode != 200 {
		t.Fatalf("turn: %d %s", resp.StatusCode, resp.Body)
	}
	_ = f.Close()
	out, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	// The text handler (AWS_LAMBDA_LOG_FORMAT unset) writes key=value.
	requestID := regexp.MustCompile(`(^| )requestId=`)
	lines, requestLines := 0, 0
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if !strings.Contains(line, "lambda-req-1") {
			continue
		}
		lines++
		if n := len(requestID.FindAllString(line, -1)); n != 1 {
			t.Errorf("requestId %d times in %s", n, line)
		}
		if strings.Contains(line, "message=request ") {
			requestLines++
			id := ev.RequestContext.RequestID
			if !strings.Contains(line, "apiRequestId="+id+" ") && !strings.Contains(line, "apiRequestId="+strconv.Quote(id)+" ") {
				t.Errorf("request line without API Gateway's id %q: %s", ev.RequestContext.RequestID, line)
			}
		}
	}
	if lines == 0 || requestLines != 1 || ev.RequestContext.RequestID == "" {
		t.Fatalf("no line of the invocation: %s", out)
	}
}
