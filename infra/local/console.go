package main

import (
	"net/http"
	"os"
	"path/filepath"

	"github.com/commonly/runtime/functions/turn/app"
	"github.com/commonly/runtime/infra/console"
	"github.com/commonly/runtime/shared/tracing"
)

// withConsole puts the local console (infra/console) in front of the
// gateway: its page at /, the API's reference at /docs, every other path
// the API's.
func withConsole(api http.Handler, st *stack, cfg app.Config, secret []byte) (*console.Console, error) {
	root := repoRoot()
	return console.New(console.Config{
		API: api, Secret: secret, DB: st.ddb, StateTable: cfg.Tables.State,
		TracesFile: st.traceFile, Flush: st.traces.Flush, Alarm: st.alarm.cfg.Threshold,
		ClientDir: filepath.Join(root, "api", "client-example"), WebDir: filepath.Join(root, "infra", "console", "web"),
	})
}

// consoleLabel is the banner's line for the console.
func consoleLabel(base string, st *stack) string {
	traces := "no spans: TRACES_FILE is off"
	if st.traceFile != "" {
		traces = "spans from " + st.traceFile
	}
	return base + "/ (installs, usage, runs live, transcripts, traces; " + traces + "), the API reference at " + base + "/docs"
}

// tracesByDefault gives the stack a span file in the temporary directory,
// removed when it stops, unless TRACES_FILE names one or the standard
// OTEL_* variables send the spans elsewhere: the console draws a run's
// trace from it.
func tracesByDefault(getenv func(string) string) (func(string) string, func()) {
	if getenv(tracing.EnvFile) != "" || getenv("OTEL_TRACES_EXPORTER") != "" || getenv("OTEL_SDK_DISABLED") != "" ||
		getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "" || getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != "" {
		return getenv, func() {}
	}
	f, err := os.CreateTemp("", "commonly-spans-*.jsonl")
	if err != nil {
		return getenv, func() {}
	}
	_ = f.Close()
	return func(k string) string {
		if k == tracing.EnvFile {
			return f.Name()
		}
		return getenv(k)
	}, func() { _ = os.Remove(f.Name()) }
}

// repoRoot is the repository's root (the directory of go.mod), where the
// console finds the files npm and tsc put there; the working directory
// when there is none.
func repoRoot() string {
	dir, err := os.Getwd()
	if err != nil {
		return "."
	}
	for d := dir; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			return d
		}
		if filepath.Dir(d) == d {
			return dir
		}
	}
}
