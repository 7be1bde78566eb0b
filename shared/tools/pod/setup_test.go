package pod_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/commonly/runtime/shared/broker/brokertest"
	"github.com/commonly/runtime/shared/tools"
	"github.com/commonly/runtime/shared/tools/pod"
	"github.com/commonly/runtime/shared/tools/pod/podtest"
)

var env = tools.Env{RunID: "r1", UserID: "u1", InstallID: "i1", PodID: "p1", AgentName: "helper"}

var fixedNow = time.Date(2026, 8, 20, 10, 0, 0, 0, time.FixedZone("UTC+2", 2*3600))

type rig struct {
	broker  *brokertest.Server
	backend *podtest.Server
	client  *pod.Client
	tools   map[string]tools.Tool
}

func newRig(t *testing.T) *rig {
	t.Helper()
	b := brokertest.New(t)
	be := podtest.New(t, b.Accepts("commonly"))
	c, err := pod.New(pod.Config{BaseURL: be.URL, Tokens: b.Client(t), Now: func() time.Time { return fixedNow }})
	if err != nil {
		t.Fatal(err)
	}
	r := &rig{broker: b, backend: be, client: c, tools: map[string]tools.Tool{}}
	for _, tool := range c.Tools() {
		r.tools[tool.Spec().Name] = tool
	}
	return r
}

func (r *rig) call(t *testing.T, name, args string) tools.Result {
	t.Helper()
	tool, ok := r.tools[name]
	if !ok {
		t.Fatalf("no tool %q", name)
	}
	return tool.Call(context.Background(), env, json.RawMessage(args))
}

// output decodes a result's output as the model would see it.
func output(t *testing.T, res tools.Result) map[string]any {
	t.Helper()
	if res.Err != nil {
		t.Fatalf("tool error: %v", res.Err)
	}
	b, err := json.Marshal(res.Output)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// assertNoSecret fails when any credential the broker handed out appears
// in what the tool returns.
func assertNoSecret(t *testing.T, b *brokertest.Server, res tools.Result) {
	t.Helper()
	seen, err := json.Marshal(res.Output)
	if err != nil {
		t.Fatal(err)
	}
	text := string(seen)
	if res.Err != nil {
		text += res.Err.Error()
	}
	for _, s := range b.Secrets() {
		if strings.Contains(text, s) {
			t.Errorf("result leaks a credential: %s", text)
		}
	}
}
