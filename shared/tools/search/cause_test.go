package search_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/commonly/runtime/shared/httpwire"
	"github.com/commonly/runtime/shared/tools/search"
)

// A failed query reads to the model as before, and keeps its status or
// transport cause for the log.
func TestFailuresKeepTheirCause(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusTooManyRequests)
	}))
	t.Cleanup(srv.Close)
	down := httptest.NewServer(http.NotFoundHandler())
	down.Close()
	for _, c := range []struct {
		url, text string
		kind      httpwire.Kind
		status    int
	}{
		{srv.URL, "web search: rate limited, try again later (status 429)", httpwire.KindStatus, 429},
		{down.URL, "web search: provider unreachable", httpwire.KindTransport, 0},
	} {
		tool, err := search.New(search.Config{Provider: search.ProviderExa, APIKey: key, BaseURL: c.url})
		if err != nil {
			t.Fatal(err)
		}
		res := tool.Call(context.Background(), env, json.RawMessage(`{"query": "go"}`))
		e, ok := errors.AsType[*httpwire.Error](res.Err)
		if !ok || res.Err.Error() != c.text || e.Kind != c.kind || e.Status != c.status || res.Usage.SearchQueries != 1 {
			t.Fatalf("error %q (%+v), usage %+v; want %q of kind %v, one query", res.Err, e, res.Usage, c.text, c.kind)
		}
		if c.kind == httpwire.KindTransport && e.Err == nil {
			t.Error("the transport cause was dropped")
		}
	}
}
