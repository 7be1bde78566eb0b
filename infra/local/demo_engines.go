package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/commonly/runtime/infra/localstack"
	"github.com/commonly/runtime/shared/runs"
)

// demoEngines moves the demo install to the durable-object engine and
// back through the API, with a turn at each step: the migration in
// progress (the engine left still serves), done (the Durable Object
// runtime serves), rolled back (native again).
func demoEngines(ctx context.Context, base, admin, user string, out io.Writer) error {
	fmt.Fprintln(out, "\nBoth engines: the demo install moved to durable-object and back (POST /v1/installs/demo-install/migration), a turn at each step:")
	for i, state := range []string{"in-progress", "done", "rolled-back"} {
		status, body, err := localstack.Call(ctx, http.MethodPost, base+"/v1/installs/"+demoInstall+"/migration", admin, nil,
			mustJSON(map[string]string{"to": "durable-object", "state": state}))
		if err != nil {
			return err
		}
		var in struct {
			Engine         string `json:"engine"`
			EngineInEffect string `json:"engineInEffect"`
		}
		if status != http.StatusOK || json.Unmarshal(body, &in) != nil {
			return fmt.Errorf("migration %s: %d %s", state, status, body)
		}
		status, body, err = localstack.Call(ctx, http.MethodPost, base+"/v1/installs/"+demoInstall+"/turns", user,
			map[string]string{"Prefer": "wait=25", "Idempotency-Key": fmt.Sprintf("demo-engines-%d-%d", time.Now().UnixNano(), i)},
			mustJSON(map[string]string{"message": "Which engine answers this turn?", "trigger": "demo"}))
		if err != nil {
			return err
		}
		var run runs.Run
		if status != http.StatusOK || json.Unmarshal(body, &run) != nil {
			return fmt.Errorf("turn after %s: %d %s", state, status, body)
		}
		fmt.Fprintf(out, "  %-12s engine %s, engineInEffect %s -> turn on %s: %s, %d tokens, %s\n",
			state, in.Engine, in.EngineInEffect, run.Engine, run.Status, run.Tokens.Prompt+run.Tokens.Completion, run.CostMicros)
		fmt.Fprintln(out, indent(oneLine(run.FinalMessage, 110), "               < "))
	}
	return nil
}
