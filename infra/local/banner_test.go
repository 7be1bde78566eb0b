package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	reaperhandler "github.com/commonly/runtime/functions/reaper/handler"
	"github.com/commonly/runtime/infra/awslocal/apigatewaylocal"
	"github.com/commonly/runtime/infra/localstack"
)

// Issue 35: the API's URL is the first line make run prints, and its
// banner fits in 100 columns.
func TestBannerAPIFirstWithin100Columns(t *testing.T) {
	s := startLocal(t, nil)
	out := s.Output()
	lines := strings.Split(out, "\n")
	if lines[0] != "API: "+s.base {
		t.Errorf("first line %q, want the API's URL", lines[0])
	}
	for _, l := range lines {
		if l == "" {
			break // the banner ends at its blank line
		}
		if n := utf8.RuneCountInString(l); n > 100 {
			t.Errorf("a banner line of %d columns: %q", n, l)
		}
	}
}

// Issue 35: once serving, each request is one short line (method, path,
// status, the run it names, time); Ctrl-C ends with one line, stopped,
// and no error (exit 0).
func TestRequestLinesAndStopped(t *testing.T) {
	s := startLocal(t, nil)
	user, _ := apigatewaylocal.MintToken(s.secret, demoUser, nil, time.Hour, time.Now())
	status, _, err := localstack.Call(context.Background(), http.MethodGet, s.base+"/v1/me/usage", user, nil, "")
	if err != nil || status != http.StatusOK {
		t.Fatalf("usage: %d %v", status, err)
	}
	if err := s.stop(); err != nil {
		t.Fatalf("stopped with %v", err)
	}
	out := s.Output()
	served := out[strings.Index(out, "Serving;"):]
	if !regexp.MustCompile(`(?m)^  \d\d:\d\d:\d\d GET /v1/me/usage 200 - [\d.]+ms$`).MatchString(served) {
		t.Errorf("no line for the request in:\n%s", served)
	}
	if !strings.HasSuffix(out, "\nstopped\n") {
		t.Errorf("the output does not end with stopped:\n%s", served)
	}
}

// Issue 35: --help prints the usage, and starts nothing.
func TestHelpPrintsUsage(t *testing.T) {
	var out bytes.Buffer
	err := run(context.Background(), []string{"--help"}, func(string) string { return "" }, &out)
	if !errors.Is(err, flag.ErrHelp) || !strings.HasPrefix(out.String(), "usage: go run ./infra/local") {
		t.Errorf("--help: %v\n%s", err, out.String())
	}
}

// A sweep that did something is one line; one that did nothing, none.
func TestSweepLine(t *testing.T) {
	var out bytes.Buffer
	printSweep(&out, localstack.Sweep{})
	printSweep(&out, localstack.Sweep{Result: reaperhandler.Result{Killed: 1, RunsInterrupted: 1, RunsRefunded: 1}})
	if got := out.String(); got != "  reaper <- 1 sandbox(es) killed, 0 already gone, 0 not killed; 1 run(s) closed interrupted (1 refunded), 0 left; 0 source(s) failed\n" {
		t.Errorf("output %q", got)
	}
}
