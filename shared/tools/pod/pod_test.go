package pod_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/commonly/runtime/shared/httpwire"
	"github.com/commonly/runtime/shared/tools"
	"github.com/commonly/runtime/shared/tools/pod"
	"github.com/commonly/runtime/shared/tools/pod/podtest"
)

func TestNewValidatesConfig(t *testing.T) {
	r := newRig(t)
	if _, err := pod.New(pod.Config{BaseURL: "not a url", Tokens: r.broker.Client(t)}); err == nil {
		t.Error("bad URL accepted")
	}
	if _, err := pod.New(pod.Config{BaseURL: "http://backend"}); err == nil {
		t.Error("missing token source accepted")
	}
}

func TestSpecs(t *testing.T) {
	r := newRig(t)
	want := []string{pod.NameReadContext, pod.NamePostMessage, pod.NameReadMemory, pod.NameWriteMemory, pod.NameCreateTask}
	got := r.client.Tools()
	if len(got) != len(want) {
		t.Fatalf("%d tools, want %d", len(got), len(want))
	}
	for i, tool := range got {
		s := tool.Spec()
		if s.Name != want[i] || s.Description == "" || s.Parameters["type"] != "object" || s.Parameters["additionalProperties"] != false {
			t.Errorf("spec %d = %+v", i, s)
		}
	}
}

func TestReadContext(t *testing.T) {
	r := newRig(t)
	for i := 1; i <= 30; i++ {
		r.backend.AddMessage("p1", podtest.Message{Author: "ana", Content: fmt.Sprintf("message %d", i), CreatedAt: "2026-08-20T09:00:00Z"})
	}
	r.backend.AddMessage("p2", podtest.Message{Author: "bob", Content: "another pod"})

	out := output(t, r.call(t, pod.NameReadContext, `{}`))
	msgs := out["messages"].([]any)
	if len(msgs) != 20 {
		t.Fatalf("%d messages, want the default 20", len(msgs))
	}
	if first, last := msgs[0].(map[string]any), msgs[19].(map[string]any); first["content"] != "message 11" || last["content"] != "message 30" || last["author"] != "ana" {
		t.Errorf("not the latest 20 oldest first: %v … %v", first, last)
	}
	if _, ok := out["note"]; ok {
		t.Errorf("note without a cut: %v", out["note"])
	}

	out = output(t, r.call(t, pod.NameReadContext, `{"messageCount": 3}`))
	if msgs := out["messages"].([]any); len(msgs) != 3 || msgs[2].(map[string]any)["content"] != "message 30" {
		t.Errorf("messageCount 3: %v", msgs)
	}
	calls := r.backend.Calls()
	if last := calls[len(calls)-1]; last.Path != "/api/v1/pods/p1/messages" || last.Query != "limit=3" || !last.Authorized || last.Method != http.MethodGet {
		t.Errorf("backend call = %+v", last)
	}
}

func TestReadContextIsCapped(t *testing.T) {
	r := newRig(t)
	r.backend.AddMessage("p1", podtest.Message{Author: "ana", Content: strings.Repeat("é", 700)})
	out := output(t, r.call(t, pod.NameReadContext, `{"messageCount": 1}`))
	m := out["messages"].([]any)[0].(map[string]any)
	if c := m["content"].(string); utf8.RuneCountInString(c) != 600 || !strings.HasSuffix(c, "…") || m["truncated"] != true {
		t.Errorf("700 characters read as %d, truncated=%v", utf8.RuneCountInString(c), m["truncated"])
	}
	if !strings.Contains(out["note"].(string), "cut to 600") {
		t.Errorf("note = %v", out["note"])
	}

	r = newRig(t)
	for i := range 20 {
		r.backend.AddMessage("p1", podtest.Message{Author: "ana", Content: fmt.Sprintf("%03d", i) + strings.Repeat("x", 597)})
	}
	out = output(t, r.call(t, pod.NameReadContext, `{}`))
	msgs := out["messages"].([]any)
	total := 0
	for _, m := range msgs {
		total += utf8.RuneCountInString(m.(map[string]any)["content"].(string))
	}
	// 13 messages of 600 fit in 8,000; the 7 oldest are dropped.
	if len(msgs) != 13 || total > 8000 || !strings.HasPrefix(msgs[0].(map[string]any)["content"].(string), "007") {
		t.Errorf("%d messages, %d characters, first %q", len(msgs), total, msgs[0].(map[string]any)["content"].(string)[:3])
	}
	if !strings.Contains(out["note"].(string), "7 older messages omitted") {
		t.Errorf("note = %v", out["note"])
	}
}

func TestPostMessage(t *testing.T) {
	r := newRig(t)
	res := r.call(t, pod.NamePostMessage, `{"content": "hello pod"}`)
	out := output(t, res)
	if !res.Posted {
		t.Error("Posted not set")
	}
	msgs := r.backend.Messages("p1")
	if len(msgs) != 1 || msgs[0].Content != "hello pod" || msgs[0].Author != "helper" || out["messageId"] != msgs[0].ID {
		t.Errorf("backend has %+v, output %v", msgs, out)
	}
}

func TestPoster(t *testing.T) {
	r := newRig(t)
	var p pod.Poster = r.client
	if err := p.Post(context.Background(), env, "the final answer"); err != nil {
		t.Fatal(err)
	}
	if err := p.Post(context.Background(), env, strings.Repeat("a", 5000)); err != nil {
		t.Fatal(err)
	}
	msgs := r.backend.Messages("p1")
	if len(msgs) != 2 || msgs[0].Content != "the final answer" || utf8.RuneCountInString(msgs[1].Content) != 4000 {
		t.Errorf("posted %d messages", len(msgs))
	}
	if err := p.Post(context.Background(), env, "  "); err == nil {
		t.Error("empty answer posted")
	}
	r.backend.Echo(true)
	r.backend.Fail(http.StatusServiceUnavailable)
	err := p.Post(context.Background(), env, "again")
	if err == nil || !strings.Contains(err.Error(), "status 503") {
		t.Fatalf("Post on a failing backend: %v", err)
	}
	assertNoSecret(t, r.broker, tools.Result{Err: err})
	noAgent := env
	noAgent.AgentName = ""
	if err := p.Post(context.Background(), noAgent, "x"); err == nil {
		t.Error("posted without an agent name")
	}
}

func TestMemory(t *testing.T) {
	r := newRig(t)
	r.backend.SetMemory("p1", "helper", "2026-08-19T08:00:00Z likes tea")

	res := r.call(t, pod.NameWriteMemory, `{"content": "  prefers green tea "}`)
	out := output(t, res)
	if out["at"] != "2026-08-20T08:00:00Z" {
		t.Errorf("stamp = %v, want the injected now in UTC", out["at"])
	}
	want := "2026-08-19T08:00:00Z likes tea\n2026-08-20T08:00:00Z prefers green tea"
	if got := r.backend.Memory("p1", "helper"); got != want {
		t.Errorf("memory = %q, want %q", got, want)
	}
	out = output(t, r.call(t, pod.NameReadMemory, `{}`))
	if out["content"] != want {
		t.Errorf("read %q", out["content"])
	}
	if c := r.backend.Calls(); c[len(c)-1].Path != "/api/v1/pods/p1/agents/helper/memory" {
		t.Errorf("path %q", c[len(c)-1].Path)
	}

	r.backend.SetMemory("p1", "helper", "OLD"+strings.Repeat("m", 9000)+"NEW")
	out = output(t, r.call(t, pod.NameReadMemory, `{}`))
	c := out["content"].(string)
	if utf8.RuneCountInString(c) != 8000 || !strings.HasSuffix(c, "NEW") || strings.Contains(c, "OLD") || out["note"] == nil {
		t.Errorf("long memory read as %d characters, note %v", utf8.RuneCountInString(c), out["note"])
	}
}

func TestCreateTask(t *testing.T) {
	r := newRig(t)
	out := output(t, r.call(t, pod.NameCreateTask, `{"title": "Review PR", "assignee": "ana", "notes": "by Friday"}`))
	tasks := r.backend.Tasks("p1")
	if len(tasks) != 1 || out["taskId"] != tasks[0].ID {
		t.Fatalf("tasks %+v, output %v", tasks, out)
	}
	if got := tasks[0]; got.Title != "Review PR" || got.Assignee != "ana" || got.Notes != "by Friday" || got.CreatedBy != "helper" {
		t.Errorf("task = %+v", got)
	}
	output(t, r.call(t, pod.NameCreateTask, `{"title": "Only a title"}`))
	if tasks := r.backend.Tasks("p1"); len(tasks) != 2 || tasks[1].Assignee != "" {
		t.Errorf("tasks %+v", tasks)
	}
}

func TestBadArguments(t *testing.T) {
	cases := []struct{ tool, args string }{
		{pod.NameReadContext, `{"messageCount": 0}`},
		{pod.NameReadContext, `{"messageCount": 51}`},
		{pod.NameReadContext, `{"messageCount": "5"}`},
		{pod.NameReadContext, `{"messageCount": 2.5}`},
		{pod.NameReadContext, `{"count": 5}`},
		{pod.NamePostMessage, `{}`},
		{pod.NamePostMessage, `{"content": " \n "}`},
		{pod.NamePostMessage, `{"content": 5}`},
		{pod.NamePostMessage, `{"content": "` + strings.Repeat("a", 4001) + `"}`},
		{pod.NamePostMessage, `{"content": "hi", "channel": "x"}`},
		{pod.NameReadMemory, `{"key": "x"}`},
		{pod.NameWriteMemory, `{}`},
		{pod.NameWriteMemory, `{"content": ""}`},
		{pod.NameWriteMemory, `{"content": "` + strings.Repeat("a", 2001) + `"}`},
		{pod.NameCreateTask, `{}`},
		{pod.NameCreateTask, `{"title": " "}`},
		{pod.NameCreateTask, `{"title": "` + strings.Repeat("a", 201) + `"}`},
		{pod.NameCreateTask, `{"title": "t", "notes": "` + strings.Repeat("a", 4001) + `"}`},
		{pod.NameCreateTask, `{"title": "t", "assignee": "` + strings.Repeat("a", 101) + `"}`},
		{pod.NameCreateTask, `{"title": "t", "due": "tomorrow"}`},
	}
	for _, c := range cases {
		t.Run(c.tool+" "+c.args[:min(len(c.args), 40)], func(t *testing.T) {
			r := newRig(t)
			res := r.call(t, c.tool, c.args)
			if !errors.Is(res.Err, tools.ErrBadArguments) || res.Output != nil || res.Posted || res.Fatal != nil {
				t.Errorf("result = %+v, want a bad-arguments tool error", res)
			}
			if n := len(r.backend.Calls()) + len(r.broker.Calls()); n != 0 {
				t.Errorf("%d calls made for bad arguments", n)
			}
		})
	}
}

// valid calls every tool once with good arguments.
var valid = []struct{ tool, args string }{
	{pod.NameReadContext, `{"messageCount": 5}`},
	{pod.NamePostMessage, `{"content": "hi"}`},
	{pod.NameReadMemory, `{}`},
	{pod.NameWriteMemory, `{"content": "note"}`},
	{pod.NameCreateTask, `{"title": "t"}`},
}

func TestUpstreamFailures(t *testing.T) {
	cases := []struct {
		status int
		want   string
	}{
		{http.StatusUnauthorized, "not authorized (status 401)"},
		{http.StatusNotFound, "not found (status 404)"},
		{http.StatusTooManyRequests, "rate limited"},
		{http.StatusBadRequest, "rejected the request (status 400)"},
		{http.StatusInternalServerError, "unavailable (status 500)"},
	}
	for _, c := range cases {
		for _, v := range valid {
			r := newRig(t)
			r.backend.Echo(true)
			r.backend.Fail(c.status)
			res := r.call(t, v.tool, v.args)
			if res.Err == nil || !strings.Contains(res.Err.Error(), c.want) || res.Output != nil || res.Posted || res.Fatal != nil {
				t.Errorf("%s on %d: %+v, want a tool error with %q", v.tool, c.status, res, c.want)
			}
			if e, ok := errors.AsType[*httpwire.Error](res.Err); !ok || e.Status != c.status {
				t.Errorf("%s on %d: the status is not kept for the log: %#v", v.tool, c.status, res.Err)
			}
			assertNoSecret(t, r.broker, res)
		}
	}
}

func TestMalformedAnswers(t *testing.T) {
	for _, v := range valid {
		r := newRig(t)
		r.backend.Echo(true)
		r.backend.Fail(http.StatusOK) // 200 with an HTML body
		res := r.call(t, v.tool, v.args)
		switch v.tool {
		case pod.NamePostMessage, pod.NameCreateTask, pod.NameWriteMemory:
			// The write happened: reporting failure would make the model repeat it.
			if res.Err != nil {
				t.Errorf("%s: %v, want success", v.tool, res.Err)
			}
			if v.tool == pod.NamePostMessage && !res.Posted {
				t.Errorf("%s: Posted not set", v.tool)
			}
		default:
			if res.Err == nil || !strings.Contains(res.Err.Error(), "malformed") {
				t.Errorf("%s: %+v, want a malformed-answer error", v.tool, res)
			}
		}
		assertNoSecret(t, r.broker, res)
	}
}

func TestBrokerFailures(t *testing.T) {
	for _, status := range []int{http.StatusServiceUnavailable, http.StatusUnauthorized, http.StatusNotFound} {
		for _, v := range valid {
			r := newRig(t)
			r.broker.FailTokens(status)
			res := r.call(t, v.tool, v.args)
			if res.Err == nil || !strings.Contains(res.Err.Error(), "could not obtain credentials") || res.Fatal != nil {
				t.Errorf("%s with broker %d: %+v", v.tool, status, res)
			}
			// The model gets the fixed words; the log gets the broker's cause.
			if ce, ok := errors.AsType[*tools.CallError](res.Err); !ok || ce.Cause == nil || ce.Cause.Error() == "" {
				t.Errorf("%s with broker %d: the log would not say why: %#v", v.tool, status, res.Err)
			}
			if n := len(r.backend.Calls()); n != 0 {
				t.Errorf("%s reached the backend without a token", v.tool)
			}
			assertNoSecret(t, r.broker, res)
		}
	}
}

func TestEveryCallFetchesItsOwnToken(t *testing.T) {
	r := newRig(t)
	for _, v := range valid {
		if res := r.call(t, v.tool, v.args); res.Err != nil {
			t.Fatalf("%s: %v", v.tool, res.Err)
		}
	}
	issued := r.broker.Issued()
	if len(issued) != len(valid) {
		t.Fatalf("%d tokens for %d calls", len(issued), len(valid))
	}
	for _, i := range issued {
		if i.UserID != "u1" || i.Audience != "commonly" {
			t.Errorf("token issued to %+v", i)
		}
	}
	for _, c := range r.backend.Calls() {
		if !c.Authorized {
			t.Errorf("backend refused %+v", c)
		}
	}
}

func TestEchoedTokensAreScrubbed(t *testing.T) {
	r := newRig(t)
	r.backend.AddMessage("p1", podtest.Message{Author: "ana", Content: "hello"})
	r.backend.SetMemory("p1", "helper", "note ")
	r.backend.Echo(true)
	for _, v := range valid {
		res := r.call(t, v.tool, v.args)
		if res.Err != nil {
			t.Fatalf("%s: %v", v.tool, res.Err)
		}
		assertNoSecret(t, r.broker, res)
	}
	out := output(t, r.call(t, pod.NameReadContext, `{}`))
	msgs := out["messages"].([]any)
	if last := msgs[len(msgs)-1].(map[string]any); last["content"] != "your token is [redacted]" {
		t.Errorf("echoed token shown as %q", last["content"])
	}
}

func TestIdentifiersAreEscaped(t *testing.T) {
	r := newRig(t)
	odd := env
	odd.PodID = "p/1?x=#"
	tool := r.tools[pod.NameReadContext]
	if res := tool.Call(context.Background(), odd, []byte(`{}`)); res.Err != nil {
		t.Fatal(res.Err)
	}
	if c := r.backend.Calls(); c[0].Path != "/api/v1/pods/p%2F1%3Fx=%23/messages" || c[0].Query != "limit=20" {
		t.Errorf("call = %+v", c[0])
	}
	for _, bad := range []string{"", ".", ".."} {
		odd.PodID = bad
		if res := tool.Call(context.Background(), odd, []byte(`{}`)); res.Err == nil {
			t.Errorf("pod id %q accepted", bad)
		}
	}
}

// A refused id is reported in the pod's words, before any credential is
// asked for.
func TestInvalidIdentifierMessage(t *testing.T) {
	r := newRig(t)
	odd := env
	for _, bad := range []string{"", ".", ".."} {
		odd.PodID = bad
		res := r.tools[pod.NameReadContext].Call(context.Background(), odd, []byte(`{}`))
		if want := `pod: invalid identifier "` + bad + `" in the turn`; res.Err == nil || res.Err.Error() != want {
			t.Errorf("pod id %q: err = %v, want %q", bad, res.Err, want)
		}
	}
	if n := len(r.backend.Calls()) + len(r.broker.Calls()); n != 0 {
		t.Errorf("%d calls for refused ids", n)
	}
}

func TestCancelledContext(t *testing.T) {
	r := newRig(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	res := r.tools[pod.NameReadMemory].Call(ctx, env, []byte(`{}`))
	if !errors.Is(res.Err, context.Canceled) {
		t.Errorf("err = %v, want context.Canceled", res.Err)
	}
}
