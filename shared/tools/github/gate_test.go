package github_test

import (
	"context"
	"slices"
	"testing"

	"github.com/commonly/runtime/shared/broker"
	"github.com/commonly/runtime/shared/tools"
	"github.com/commonly/runtime/shared/tools/github"
)

// The gate, the real broker client and the fake broker together: the
// connector's tools are offered only while the user's connection is active.
func TestGateOffersGitHubOnlyWhileConnected(t *testing.T) {
	r := newRig(t)
	cat := tools.Catalog{Connectors: map[string][]tools.Tool{github.Connector: r.client.Tools()}}
	sel := tools.Selection{UserID: "u1", Connectors: []string{github.Connector}}
	brokerClient := r.broker.Client(t)

	cases := []struct {
		status string
		want   []string
	}{
		{broker.StatusActive, []string{github.NameSearchIssues, github.NameGetIssue}},
		{broker.StatusRevoked, nil},
		{broker.StatusExpired, nil},
		{broker.StatusMissing, nil},
	}
	for _, c := range cases {
		r.broker.SetConnection("u1", github.Connector, c.status)
		set, err := tools.Offer(context.Background(), cat, sel, brokerClient)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, s := range set.Specs() {
			got = append(got, s.Name)
		}
		if !slices.Equal(got, c.want) {
			t.Errorf("%s: offered %v, want %v", c.status, got, c.want)
		}
		if _, ok := set.Lookup(github.NameGetIssue); ok != (c.want != nil) {
			t.Errorf("%s: Lookup = %v", c.status, ok)
		}
	}
}
