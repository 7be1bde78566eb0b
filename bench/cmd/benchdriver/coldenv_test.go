package main

import (
	"strings"
	"testing"

	"github.com/commonly/runtime/functions/turn/app"
)

// The cold starts' environment is one the turn function starts with
// (make bench failed at its first cold start when the function began to
// refuse an unnamed model and sandbox).
func TestColdEnvStartsTheTurnFunction(t *testing.T) {
	vars := map[string]string{}
	for _, kv := range coldEnv(t.TempDir(), map[string]string{"AWS_REGION": "us-east-1"}) {
		k, v, _ := strings.Cut(kv, "=")
		vars[k] = v
	}
	cfg, err := app.LoadConfig(func(k string) string { return vars[k] })
	if err != nil {
		t.Fatalf("the turn function would not start: %v", err)
	}
	if cfg.Tables.State == "" || vars["AWS_REGION"] != "us-east-1" {
		t.Errorf("config %+v, env %v", cfg.Tables, vars)
	}
}
