package pod_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/commonly/runtime/shared/httpwire"
	"github.com/commonly/runtime/shared/tools/pod"
)

type fixedToken struct{}

func (fixedToken) Token(context.Context, string, string) (string, error) { return "pod-token", nil }

// A failed call reads to the model as before, and keeps its status or
// transport cause for the log.
func TestFailuresKeepTheirCause(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusBadGateway)
	}))
	t.Cleanup(srv.Close)
	down := httptest.NewServer(http.NotFoundHandler())
	down.Close()
	for _, c := range []struct {
		url, text string
		kind      httpwire.Kind
		status    int
	}{
		{srv.URL, "commonly backend unavailable (status 502)", httpwire.KindStatus, 502},
		{down.URL, "commonly backend unreachable", httpwire.KindTransport, 0},
	} {
		client, err := pod.New(pod.Config{BaseURL: c.url, Tokens: fixedToken{}})
		if err != nil {
			t.Fatal(err)
		}
		res := client.Tools()[0].Call(context.Background(), env, json.RawMessage(`{}`))
		e, ok := errors.AsType[*httpwire.Error](res.Err)
		if !ok || res.Err.Error() != c.text || e.Kind != c.kind || e.Status != c.status {
			t.Fatalf("error %q (%+v), want %q of kind %v", res.Err, e, c.text, c.kind)
		}
		if c.kind == httpwire.KindTransport && e.Err == nil {
			t.Error("the transport cause was dropped")
		}
	}
}
