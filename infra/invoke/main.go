// Command invoke is `make invoke`: what `sam local invoke -t TEMPLATE
// FUNCTION -e EVENT --env-vars ENV` does, without Docker. It finds the
// function in the synthesized template by its construct id, takes its
// code asset (or this machine's build of the same program) and its
// environment from the template, resolved to local values and overridden
// by a SAM env-vars file, points DynamoDB at the embedded server (tables
// by store.CreateTables), EventBridge and Lambda at local stand-ins, runs
// the bootstrap under the Lambda Runtime Interface Emulator, posts the
// event and prints the response. Asynchronous invocations the function
// makes of itself (a turn's dispatch) run next, through the same
// bootstrap, retried as Lambda retries a failed one; their responses go
// to stderr. The session (SESSION=dir) keeps its tables whatever happened
// to an invocation.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

func main() {
	var cfg config
	var event string
	flag.StringVar(&cfg.Template, "t", "", "the synthesized template, cdk.out/<stack>.template.json")
	flag.StringVar(&cfg.Function, "fn", "", "the function: construct id (TurnFunction), logical id or construct path")
	flag.StringVar(&event, "e", "", `the event file (JSON); "stream": the session's runs-stream records the alarm function has not had`)
	flag.StringVar(&cfg.EnvFile, "env-vars", "", `SAM env-vars file: {"Parameters": {...}, "TurnFunction": {"VAR": "value"}}`)
	flag.StringVar(&cfg.RIE, "rie", "aws-lambda-rie", "the Lambda Runtime Interface Emulator")
	flag.StringVar(&cfg.BinDir, "bin", "bin", "where `make build` puts <function>/bootstrap for this machine")
	flag.StringVar(&cfg.EventsFile, "events-file", os.Getenv("EVENTS_FILE"), "append EventBridge events here (JSON lines)")
	flag.DurationVar(&cfg.RetryDelay, "retry-delay", 0, "the wait before a failed asynchronous invocation's retry (Lambda retries twice, after a minute or two; default 1s)")
	flag.StringVar(&cfg.SessionDir, "session", "", "keep the embedded DynamoDB's items in this directory between invokes (restored before, saved after)")
	runID := flag.String("run-id", "", "replace the event's run id (pathParameters.runId or dispatch.runId) with this one, a run of the session")
	flag.Parse()
	if cfg.Template == "" || cfg.Function == "" || event == "" {
		flag.Usage()
		os.Exit(2)
	}
	cfg.Logs = os.Stderr
	if err := run(context.Background(), cfg, event, *runID, os.Stdout); err != nil {
		var failed invocationFailed
		if !errors.As(err, &failed) {
			fmt.Fprintln(os.Stderr, "invoke:", err)
		}
		os.Exit(1) // a failed invocation too, for scripts
	}
}

// invocationFailed is an invocation that failed in the function (its
// answer printed as any other).
type invocationFailed struct{}

func (invocationFailed) Error() string { return "the invocation failed" }

// run is one `make invoke`: the event (a file, or -e stream: the
// session's pending runs-stream records) through the function, its
// answer on out, the rest on cfg.Logs.
func run(ctx context.Context, cfg config, event, runID string, out io.Writer) error {
	if cfg.SessionDir != "" && cfg.EventsFile == "" {
		cfg.EventsFile = filepath.Join(cfg.SessionDir, "events.jsonl")
	}
	var payload []byte
	var streamed int
	var err error
	if event == StreamEvent {
		payload, streamed, err = streamBatch(cfg.SessionDir)
	} else {
		payload, err = os.ReadFile(event)
	}
	if err != nil {
		return err
	}
	if runID != "" {
		if payload, err = withRunID(payload, runID); err != nil {
			return err
		}
	}
	s, err := start(ctx, cfg)
	if err != nil {
		return err
	}
	defer s.close()
	resp, err := s.invoke(ctx, payload)
	failed := resp.FunctionError
	for i, a := range resp.Async {
		fmt.Fprintf(cfg.Logs, "asynchronous invocation %d of %s: %s\n", i+1, s.fn.ID, a.Body)
	}
	// An asynchronous invocation fails when its last attempt does: Lambda
	// retried the others.
	if n := len(resp.Async); n > 0 && resp.Async[n-1].FunctionError {
		failed = true
	}
	for _, e := range s.st.Bus.Events() {
		fmt.Fprintf(cfg.Logs, "EventBridge event on %s: %s %s %s\n", e.Bus, e.Source, e.DetailType, e.Detail)
	}
	// The session keeps its tables whatever happened to the invocation:
	// a run it admitted is still there for the next invoke.
	if serr := s.save(ctx); serr != nil {
		return errors.Join(err, serr)
	}
	if streamed > 0 && err == nil && !resp.FunctionError {
		if err := delivered(cfg.SessionDir, streamed, resp.Body); err != nil {
			return err
		}
		fmt.Fprintf(cfg.Logs, "session %s: %d runs-stream record(s) delivered to %s\n", cfg.SessionDir, streamed, s.fn.ID)
	}
	if err != nil {
		return err
	}
	if id := createdRun(resp.Body); id != "" && cfg.SessionDir != "" {
		fmt.Fprintf(cfg.Logs, "session %s: run %s (RUN_ID=%s for get-run.json or dispatch.json)\n", cfg.SessionDir, id, id)
	}
	fmt.Fprintln(out, string(resp.Body))
	if failed {
		return invocationFailed{}
	}
	return nil
}

// createdRun is the run id an API response's body names, if any.
func createdRun(body []byte) string {
	var resp struct {
		Body string `json:"body"`
	}
	var run struct {
		RunID string `json:"runId"`
	}
	if json.Unmarshal(body, &resp) != nil || json.Unmarshal([]byte(resp.Body), &run) != nil {
		return ""
	}
	return run.RunID
}
