package main

import (
	"net/http"
	"os"
	"path/filepath"

	"github.com/commonly/runtime/infra/console"
	"github.com/commonly/runtime/infra/localstack"
	"github.com/commonly/runtime/shared/tracing"
)

// withConsole puts the local console (infra/console) in front of the
// stack's gateway: its page at /, the API's reference at /docs, every
// other path the API's.
func withConsole(st *localstack.Stack, api http.Handler, tr trace, secret []byte) (http.Handler, error) {
	root := repoRoot()
	cfg := console.Config{
		API: api, Secret: secret, DB: st.Dynamo(), StateTable: st.Tables.State,
		TracesFile: tr.file, Alarm: st.AlarmConfig.Threshold,
		ClientDir: filepath.Join(root, "api", "client-example"), WebDir: filepath.Join(root, "infra", "console", "web"),
	}
	if tr.provider != nil {
		cfg.Flush = tr.provider.Flush
	}
	return console.New(cfg)
}

// consoleTraces says where the stack's spans go, which the console and
// the demo read.
func consoleTraces(tr trace) string {
	if tr.file == "" {
		return "not to a file (TRACES_FILE is off): the console shows none"
	}
	return tr.file + " (TRACES_FILE)"
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
