package main

import (
	"context"
	"testing"

	"github.com/commonly/runtime/shared/broker"
	"github.com/commonly/runtime/shared/tools"
	"github.com/commonly/runtime/shared/tools/pod"
)

func TestLocalBackendSpeaksThePodAndBrokerWires(t *testing.T) {
	b := newBackend()
	url, srv, err := b.serve()
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	brk, err := broker.New(broker.Config{BaseURL: url, Token: b.serviceToken})
	if err != nil {
		t.Fatal(err)
	}
	if active, err := brk.ConnectionActive(context.Background(), "u1", "github"); err != nil || active {
		t.Errorf("github connection: %v %v", active, err)
	}
	pc, err := pod.New(pod.Config{BaseURL: url, Tokens: brk})
	if err != nil {
		t.Fatal(err)
	}
	env := tools.Env{RunID: "r", UserID: "u1", PodID: "p1", AgentName: "agent"}
	if err := pc.Post(context.Background(), env, "hello pod"); err != nil {
		t.Fatal(err)
	}
	if msgs := b.podMessages("p1"); len(msgs) != 1 || msgs[0].Content != "hello pod" || msgs[0].Author != "agent" {
		t.Errorf("messages = %+v", msgs)
	}
	bad, err := broker.New(broker.Config{BaseURL: url, Token: "wrong"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := bad.Token(context.Background(), "u1", "commonly"); err == nil {
		t.Error("the broker accepted a wrong service token")
	}
}

// make run names the offline model and the local sandbox when the real
// services are not configured (the function runs neither unless named),
// and leaves the modes alone when they are.
func TestLocalEnvNamesTheDemoModes(t *testing.T) {
	env := localEnv(func(string) string { return "" })
	if env["LLM_MODE"] != "offline" || env["SANDBOX"] != "local" {
		t.Errorf("without real services: LLM_MODE %q, SANDBOX %q", env["LLM_MODE"], env["SANDBOX"])
	}
	real := map[string]string{"LLM_BASE_URL": "https://litellm.example", "E2B_API_KEY": "e2b_k"}
	env = localEnv(func(k string) string { return real[k] })
	if env["LLM_MODE"] != "" || env["SANDBOX"] != "" {
		t.Errorf("with real services: LLM_MODE %q, SANDBOX %q", env["LLM_MODE"], env["SANDBOX"])
	}
}
