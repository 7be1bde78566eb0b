package localstack_test

import (
	"context"
	"testing"

	"github.com/commonly/runtime/infra/localstack"
	"github.com/commonly/runtime/internal/loopback"
	"github.com/commonly/runtime/shared/broker"
	"github.com/commonly/runtime/shared/tools"
	"github.com/commonly/runtime/shared/tools/pod"
)

func TestPodsSpeakThePodAndBrokerWires(t *testing.T) {
	b := localstack.NewPods()
	srv, err := loopback.Serve("127.0.0.1:0", b.Handler())
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	url := srv.URL
	brk, err := broker.New(broker.Config{BaseURL: url, Token: b.ServiceToken})
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
	if msgs := b.Messages("p1"); len(msgs) != 1 || msgs[0].Content != "hello pod" || msgs[0].Author != "agent" {
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
