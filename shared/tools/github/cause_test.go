package github_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/commonly/runtime/shared/httpwire"
	"github.com/commonly/runtime/shared/tools/github"
)

type fixedToken struct{}

func (fixedToken) Token(context.Context, string, string) (string, error) { return "gh-token", nil }

// A failed call reads to the model as before, and keeps its status or
// transport cause for the log.
func TestFailuresKeepTheirCause(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusServiceUnavailable)
	}))
	down := httptest.NewServer(http.NotFoundHandler())
	down.Close()
	t.Cleanup(srv.Close)
	for _, c := range []struct {
		url, text string
		kind      httpwire.Kind
		status    int
	}{
		{srv.URL, "github: GitHub unavailable (status 503)", httpwire.KindStatus, 503},
		{down.URL, "github: GitHub unreachable", httpwire.KindTransport, 0},
	} {
		gh, err := github.New(github.Config{BaseURL: c.url, Tokens: fixedToken{}})
		if err != nil {
			t.Fatal(err)
		}
		res := gh.Tools()[0].Call(context.Background(), env, json.RawMessage(`{"query": "crash"}`))
		e, ok := errors.AsType[*httpwire.Error](res.Err)
		if !ok || res.Err.Error() != c.text || e.Kind != c.kind || e.Status != c.status {
			t.Fatalf("error %q (%+v), want %q of kind %v", res.Err, e, c.text, c.kind)
		}
		if c.kind == httpwire.KindTransport && e.Err == nil {
			t.Error("the transport cause was dropped")
		}
	}
}
