// Command invoke is `make invoke`: what `sam local invoke -t TEMPLATE
// FUNCTION -e EVENT --env-vars ENV` does, without Docker. It finds the
// function in the synthesized template by its construct id, takes its
// code asset (or this machine's build of the same program) and its
// environment from the template, resolved to local values and overridden
// by a SAM env-vars file, points DynamoDB at the embedded server (tables
// by store.CreateTables), EventBridge and Lambda at local stand-ins, runs
// the bootstrap under the Lambda Runtime Interface Emulator, posts the
// event and prints the response. Asynchronous invocations the function
// makes of itself (a turn's dispatch) run next, as in Lambda; their
// responses go to stderr.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
)

func main() {
	var cfg config
	var event string
	flag.StringVar(&cfg.Template, "t", "", "the synthesized template, cdk.out/<stack>.template.json")
	flag.StringVar(&cfg.Function, "fn", "", "the function: construct id (TurnFunction), logical id or construct path")
	flag.StringVar(&event, "e", "", "the event file (JSON)")
	flag.StringVar(&cfg.EnvFile, "env-vars", "", `SAM env-vars file: {"Parameters": {...}, "TurnFunction": {"VAR": "value"}}`)
	flag.StringVar(&cfg.RIE, "rie", "aws-lambda-rie", "the Lambda Runtime Interface Emulator")
	flag.StringVar(&cfg.BinDir, "bin", "bin", "where `make build` puts <function>/bootstrap for this machine")
	flag.StringVar(&cfg.EventsFile, "events-file", os.Getenv("EVENTS_FILE"), "append EventBridge events here (JSON lines)")
	flag.StringVar(&cfg.SessionDir, "session", "", "keep the embedded DynamoDB's items in this directory between invokes (restored before, saved after)")
	runID := flag.String("run-id", "", "replace the event's run id (pathParameters.runId or dispatch.runId) with this one, a run of the session")
	flag.Parse()
	if cfg.Template == "" || cfg.Function == "" || event == "" {
		flag.Usage()
		os.Exit(2)
	}
	cfg.Logs = os.Stderr
	payload, err := os.ReadFile(event)
	if err != nil {
		fail(err)
	}
	if *runID != "" {
		if payload, err = withRunID(payload, *runID); err != nil {
			fail(err)
		}
	}
	if cfg.SessionDir != "" && cfg.EventsFile == "" {
		cfg.EventsFile = filepath.Join(cfg.SessionDir, "events.jsonl")
	}
	ctx := context.Background()
	s, err := start(ctx, cfg)
	if err != nil {
		fail(err)
	}
	resp, err := s.invoke(ctx, payload)
	failed := resp.FunctionError
	for i, a := range resp.Async {
		fmt.Fprintf(os.Stderr, "asynchronous invocation %d of %s: %s\n", i+1, s.fn.ID, a.Body)
		failed = failed || a.FunctionError
	}
	for _, e := range s.bus.Events() {
		fmt.Fprintf(os.Stderr, "EventBridge event on %s: %s %s %s\n", e.Bus, e.Source, e.DetailType, e.Detail)
	}
	if err == nil {
		if err = s.save(ctx); err == nil && cfg.SessionDir != "" {
			if id := createdRun(resp.Body); id != "" {
				fmt.Fprintf(os.Stderr, "session %s: run %s (RUN_ID=%s for get-run.json or dispatch.json)\n", cfg.SessionDir, id, id)
			}
		}
	}
	if cerr := s.close(); err == nil {
		err = cerr
	}
	if err != nil {
		fail(err)
	}
	fmt.Println(string(resp.Body))
	if failed {
		os.Exit(1) // as a failed invocation, for scripts
	}
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

func fail(err error) {
	fmt.Fprintln(os.Stderr, "invoke:", err)
	os.Exit(1)
}
