package dotest_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/commonly/runtime/shared/engine/durableobject/dotest"
)

func post(t *testing.T, url, auth, body string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(b)
}

// The stand-in keeps the wire: the bearer token checked, the route, the
// answer with usage, a slow answer, a failure without leaking more than
// its fixed internal text.
func TestStandInSpeaksTheWire(t *testing.T) {
	rt := dotest.New("tok")
	srv := httptest.NewServer(rt)
	defer srv.Close()
	turn := srv.URL + "/agents/helper/inst%2F1/turns"
	body := `{"runId":"r1","userId":"u1","podId":"p1","message":"hi","trigger":"user"}`

	if status, _ := post(t, turn, "Bearer wrong", body); status != http.StatusUnauthorized {
		t.Errorf("wrong token: %d", status)
	}
	if status, _ := post(t, turn, "", body); status != http.StatusUnauthorized {
		t.Errorf("no token: %d", status)
	}
	if status, _ := post(t, srv.URL+"/agents/helper/turns", "Bearer tok", body); status != http.StatusNotFound {
		t.Errorf("another route: %d", status)
	}
	if n := len(rt.Turns()); n != 0 {
		t.Errorf("%d refused requests recorded", n)
	}

	status, out := post(t, turn, "Bearer tok", body)
	var answer struct {
		FinalMessage string       `json:"finalMessage"`
		Usage        dotest.Usage `json:"usage"`
	}
	if status != 200 || json.Unmarshal([]byte(out), &answer) != nil || answer.FinalMessage != dotest.DefaultAnswer ||
		answer.Usage != (dotest.Usage{Model: dotest.Model, PromptTokens: dotest.PromptTokens, CachedPromptTokens: dotest.CachedPromptTokens, CompletionTokens: dotest.CompletionTokens}) {
		t.Errorf("answer %d %s", status, out)
	}
	got := rt.Turns()
	if len(got) != 1 || got[0].AgentName != "helper" || got[0].InstanceID != "inst/1" || got[0].RunID != "r1" || got[0].Message != "hi" || len(got[0].Fields) != 5 {
		t.Errorf("recorded %+v", got)
	}

	rt.Answer(dotest.Reply{FinalMessage: "late", Usage: &dotest.Usage{Model: "m"}, Delay: 100 * time.Millisecond})
	start := time.Now()
	if status, out := post(t, turn, "Bearer tok", body); status != 200 || !strings.Contains(out, "late") || time.Since(start) < 100*time.Millisecond {
		t.Errorf("slow answer: %d %s after %v", status, out, time.Since(start))
	}
	rt.Answer(dotest.Reply{Status: 502})
	if status, out := post(t, turn, "Bearer tok", body); status != 502 || out != dotest.InternalError {
		t.Errorf("failure: %d %s", status, out)
	}
}
