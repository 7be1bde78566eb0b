package tools_test

import (
	"context"
	"testing"
	"time"

	"github.com/commonly/runtime/shared/sandbox"
	"github.com/commonly/runtime/shared/tools"
	"github.com/commonly/runtime/shared/tools/github"
	"github.com/commonly/runtime/shared/tools/pod"
	"github.com/commonly/runtime/shared/tools/runcode"
	"github.com/commonly/runtime/shared/tools/search"
)

type noTokens struct{}

func (noTokens) Token(context.Context, string, string) (string, error) { return "", nil }

type noProvider struct{}

func (noProvider) Name() string { return "none" }
func (noProvider) Create(context.Context, sandbox.Meta) (sandbox.Session, error) {
	return nil, sandbox.ErrUnavailable
}
func (noProvider) KillSandbox(context.Context, string) (bool, error)              { return false, nil }
func (noProvider) RunSandboxes(context.Context, string) ([]sandbox.Listed, error) { return nil, nil }

type noLedger struct{}

func (noLedger) SandboxCreated(context.Context, sandbox.Record) error   { return nil }
func (noLedger) SandboxKilled(context.Context, string, time.Time) error { return nil }
func (activeChecker) ConnectionActive(context.Context, string, string) (bool, error) {
	return true, nil
}

type activeChecker struct{}

// BenchmarkOfferSpecs is the gate's share of a turn with the deployment's
// real tools: build the turn's Set and read its specs, as the loop does.
func BenchmarkOfferSpecs(b *testing.B) {
	pc, err := pod.New(pod.Config{BaseURL: "http://commonly.test", Tokens: noTokens{}})
	if err != nil {
		b.Fatal(err)
	}
	ws, err := search.New(search.Config{Provider: search.ProviderExa, APIKey: "k"})
	if err != nil {
		b.Fatal(err)
	}
	gh, err := github.New(github.Config{Tokens: noTokens{}})
	if err != nil {
		b.Fatal(err)
	}
	code, err := runcode.NewFactory(runcode.Config{Provider: noProvider{}, Ledger: noLedger{}})
	if err != nil {
		b.Fatal(err)
	}
	builtins := append(pc.Tools(), ws)
	conns := map[string][]tools.Tool{github.Connector: gh.Tools()}
	all := []string{runcode.Name, search.Name, github.NameSearchIssues, github.NameGetIssue, pod.NameReadContext,
		pod.NamePostMessage, pod.NameReadMemory, pod.NameWriteMemory, pod.NameCreateTask}
	sel := tools.Selection{UserID: "u", Tools: &all, Connectors: []string{github.Connector}}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		cat := tools.Catalog{Builtins: builtins, OptIn: []tools.Tool{code.New()}, Connectors: conns}
		set, err := tools.Offer(ctx, cat, sel, activeChecker{})
		if err != nil {
			b.Fatal(err)
		}
		if len(set.Specs()) != 9 {
			b.Fatal("specs")
		}
	}
}
