package main

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/commonly/runtime/infra/localstack"
	"github.com/commonly/runtime/shared/engine/durableobject/dotest"
)

// Directives a message may carry to the local Durable Object runtime, to
// see the fallback engine's failure paths by hand.
const (
	doFail = "[do:fail]" // the runtime answers 502: the run fails fallback_error, refunded
	doSlow = "[do:slow]" // the runtime answers after doSlowDelay (with DO_RUNTIME_TIMEOUT=2s: a timeout, estimated, not refunded)
)

const doSlowDelay = 5 * time.Second

// doRuntime is the local stand-in for the Durable Object runtime, so that
// an install on (or migrated to) the durable-object engine runs its turns
// locally: dotest's runtime on the engine's wire, answering each turn
// with usage and posting its answer to the local pod as the real runtime
// posts it itself. url is "" when DO_RUNTIME_URL names a real runtime.
type doRuntime struct {
	url string
	srv *http.Server
}

// startDORuntime starts the stand-in unless DO_RUNTIME_URL is set, and
// points env at it with a token of its own.
func startDORuntime(env map[string]string, pods *localstack.Pods) (*doRuntime, error) {
	if env["DO_RUNTIME_URL"] != "" {
		return &doRuntime{}, nil
	}
	token := randomToken()
	rt := dotest.New(token)
	rt.Script(func(t dotest.Turn) dotest.Reply {
		switch {
		case strings.Contains(t.Message, doFail):
			return dotest.Reply{Status: http.StatusBadGateway}
		}
		answer := fmt.Sprintf("[durable object runtime, local stand-in] agent %s (instance %s) read: %q", t.AgentName, t.InstanceID, t.Message)
		if pods != nil {
			pods.Add(t.PodID, t.AgentName, answer)
		}
		reply := dotest.Reply{FinalMessage: answer, Usage: &dotest.Usage{
			// What a model call of this size would report: the runtime's
			// own prompt and the message in, the answer out.
			Model: dotest.Model, PromptTokens: 900 + int64(len(t.Message))/4, CachedPromptTokens: 768, CompletionTokens: int64(len(answer))/4 + 1,
		}}
		if strings.Contains(t.Message, doSlow) {
			reply.Delay = doSlowDelay
		}
		return reply
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("local durable object runtime: %w", err)
	}
	d := &doRuntime{url: "http://" + ln.Addr().String(), srv: &http.Server{Handler: rt, ReadHeaderTimeout: 5 * time.Second}}
	go func() { _ = d.srv.Serve(ln) }()
	env["DO_RUNTIME_URL"], env["DO_RUNTIME_TOKEN"] = d.url, token
	return d, nil
}

func (d *doRuntime) close() {
	if d.srv != nil {
		_ = d.srv.Close()
	}
}

// label is the start banner's line (and its second).
func (d *doRuntime) label(env map[string]string) string {
	if d.url == "" {
		return env["DO_RUNTIME_URL"] + " (DO_RUNTIME_URL)"
	}
	return fmt.Sprintf("durable object runtime: local stand-in at %s (no DO_RUNTIME_URL),\n"+
		"            with usage, posting to the pod; %s fails (502), %s answers after %s", d.url, doFail, doSlow, doSlowDelay)
}

func randomToken() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return "local-" + hex.EncodeToString(b[:])
}
