package tools_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/commonly/runtime/shared/httpwire"
	"github.com/commonly/runtime/shared/tools"
	"github.com/commonly/runtime/shared/tools/github"
	"github.com/commonly/runtime/shared/tools/pod"
	"github.com/commonly/runtime/shared/tools/search"
)

type anyToken struct{}

func (anyToken) Token(context.Context, string, string) (string, error) { return "user-token", nil }

// Each tool client tells the model its service is unreachable in its own
// fixed words and keeps the transport's cause for the log.
func TestUnreachableServicesKeepTheirCause(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	down := srv.URL
	srv.Close()
	gh, err := github.New(github.Config{BaseURL: down, Tokens: anyToken{}})
	if err != nil {
		t.Fatal(err)
	}
	pc, err := pod.New(pod.Config{BaseURL: down, Tokens: anyToken{}})
	if err != nil {
		t.Fatal(err)
	}
	ws, err := search.New(search.Config{Provider: search.ProviderExa, APIKey: "search-key", BaseURL: down})
	if err != nil {
		t.Fatal(err)
	}
	env := tools.Env{RunID: "r1", UserID: "u1", PodID: "p1", AgentName: "helper"}
	for _, c := range []struct {
		tool       tools.Tool
		args, said string
	}{
		{gh.Tools()[0], `{"query": "crash"}`, "github: GitHub unreachable"},
		{pc.Tools()[0], `{}`, "commonly backend unreachable"},
		{ws, `{"query": "go"}`, "web search: provider unreachable"},
	} {
		res := c.tool.Call(context.Background(), env, json.RawMessage(c.args))
		e, ok := errors.AsType[*httpwire.Error](res.Err)
		if !ok || res.Err.Error() != c.said || e.Kind != httpwire.KindTransport || e.Err == nil {
			t.Errorf("%s: error %q (%#v), want %q keeping the transport's cause", c.tool.Spec().Name, res.Err, e, c.said)
		}
	}
}
