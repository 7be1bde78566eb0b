package e2b_test

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/commonly/runtime/shared/sandbox"
	"github.com/commonly/runtime/shared/sandbox/e2b"
	"github.com/commonly/runtime/shared/sandbox/e2b/e2btest"
)

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func newClient(t *testing.T, f *e2btest.Fake) *e2b.Client {
	t.Helper()
	c, err := e2b.New(f.ClientConfig())
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestNewRequiresAPIKeyAndStage(t *testing.T) {
	if _, err := e2b.New(e2b.Config{APIKey: "  ", Stage: "dev"}); err == nil {
		t.Fatal("New without an API key succeeded")
	}
	// Untagged sandboxes would be invisible to the stage's reaper.
	if _, err := e2b.New(e2b.Config{APIKey: "k", Stage: " "}); err == nil || !strings.Contains(err.Error(), "Stage") {
		t.Fatalf("New without a stage: %v", err)
	}
}

func TestCreateSendsAClosedSandbox(t *testing.T) {
	f := e2btest.Start(t)
	clock := e2btest.NewClock(t0)
	f.SetClock(clock.Now)
	c := newClient(t, f)

	meta := sandbox.Meta{RunID: "run1", UserID: "user1", InstallID: "inst1", Deadline: t0.Add(sandbox.Lifetime)}
	s, err := c.Create(context.Background(), meta)
	if err != nil {
		t.Fatal(err)
	}
	creates := f.Creates()
	if len(creates) != 1 {
		t.Fatalf("%d creates, want 1", len(creates))
	}
	want := map[string]any{
		"templateID":            "code-interpreter-v1",
		"timeout":               float64(180),
		"allow_internet_access": false,
		"network":               map[string]any{"allowPublicTraffic": false},
		"envVars":               map[string]any{},
		"secure":                true,
		"autoPause":             false,
		"metadata": map[string]any{
			"app": "commonly-turns", "stage": e2btest.DefaultStage, "runId": "run1", "userId": "user1", "installId": "inst1",
			"deadline": "2026-03-01T12:03:00Z",
		},
	}
	if !reflect.DeepEqual(creates[0].Body, want) {
		t.Errorf("create body\n got %v\nwant %v", creates[0].Body, want)
	}
	info, ok := f.Sandbox(s.ID())
	if !ok || info.State != "running" || info.EndAt.Sub(info.StartedAt) != 180*time.Second {
		t.Errorf("sandbox %+v (found %v), want running for 180s", info, ok)
	}
	if c.Name() != "e2b" {
		t.Errorf("Name = %q", c.Name())
	}
}

func TestCreateRetriesCapacityRefusals(t *testing.T) {
	tests := []struct {
		name        string
		failures    int
		status      int
		wantCreates int
		wantErr     error
	}{
		{"recovers within the retries", 2, http.StatusServiceUnavailable, 3, nil},
		{"504 is retried too", 1, http.StatusGatewayTimeout, 2, nil},
		{"persistent refusal is unavailability", 3, http.StatusServiceUnavailable, 3, sandbox.ErrUnavailable},
		{"500 is not retried", 1, http.StatusInternalServerError, 1, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := e2btest.Start(t)
			f.FailCreates(tt.failures, tt.status, "sandbox_capacity_unavailable")
			c := newClient(t, f)
			_, err := c.Create(context.Background(), sandbox.Meta{RunID: "r"})
			if got := len(f.Creates()); got != tt.wantCreates {
				t.Errorf("%d create attempts, want %d", got, tt.wantCreates)
			}
			if tt.status == http.StatusInternalServerError {
				var apiErr *e2b.APIError
				if !errors.As(err, &apiErr) || apiErr.Status != 500 || errors.Is(err, sandbox.ErrUnavailable) {
					t.Fatalf("err = %v, want a plain 500 APIError", err)
				}
				return
			}
			if !errors.Is(err, tt.wantErr) || (tt.wantErr == nil) != (err == nil) {
				t.Fatalf("err = %v, want %v", err, tt.wantErr)
			}
			var apiErr *e2b.APIError
			if err != nil && (!errors.As(err, &apiErr) || apiErr.ErrorCode != "sandbox_capacity_unavailable") {
				t.Errorf("err = %v, want the error_code kept", err)
			}
		})
	}
}

// cancelAfter cancels a context once the first response has come back.
type cancelAfter struct {
	next   http.RoundTripper
	cancel context.CancelFunc
}

func (c cancelAfter) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := c.next.RoundTrip(r)
	c.cancel()
	return resp, err
}

// A create refused for capacity waits before its retry, and that wait
// ends with the turn's context instead of running its course.
func TestCreateRetryWaitEndsWithTheContext(t *testing.T) {
	f := e2btest.Start(t)
	f.FailCreates(1, http.StatusServiceUnavailable, "sandbox_capacity_unavailable")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cfg := f.ClientConfig()
	cfg.RetryBackoff = time.Hour
	cfg.HTTPClient = &http.Client{Transport: cancelAfter{next: cfg.HTTPClient.Transport, cancel: cancel}}
	c, err := e2b.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Create(ctx, sandbox.Meta{RunID: "r"})
	if !errors.Is(err, context.Canceled) || errors.Is(err, sandbox.ErrUnavailable) || !strings.Contains(err.Error(), "status 503") {
		t.Fatalf("err = %v, want context.Canceled (after the 503), not unavailability", err)
	}
	if got := len(f.Creates()); got != 1 {
		t.Errorf("%d create attempts, want 1", got)
	}
}

func TestAPIErrorsNeverCarryTheKey(t *testing.T) {
	t.Run("401 from the fake", func(t *testing.T) {
		f := e2btest.Start(t)
		cfg := f.ClientConfig()
		cfg.APIKey = "e2b_wrong_secret_key"
		c, err := e2b.New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		_, err = c.Create(context.Background(), sandbox.Meta{})
		var apiErr *e2b.APIError
		if !errors.As(err, &apiErr) || apiErr.Status != http.StatusUnauthorized {
			t.Fatalf("err = %v, want 401", err)
		}
		if strings.Contains(err.Error(), cfg.APIKey) {
			t.Errorf("error carries the key: %v", err)
		}
	})
	t.Run("a server echoing the key", func(t *testing.T) {
		const key = "e2b_echoed_secret"
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(http.StatusBadRequest)
			_, _ = w.Write([]byte(`{"code":400,"message":"bad key ` + r.Header.Get("X-API-Key") + `","error_code":"x"}`))
		}))
		defer srv.Close()
		c, err := e2b.New(e2b.Config{APIKey: key, Stage: "test", APIURL: srv.URL})
		if err != nil {
			t.Fatal(err)
		}
		err = c.Kill(context.Background(), "sbx")
		if err == nil || strings.Contains(err.Error(), key) || !strings.Contains(err.Error(), "[redacted]") {
			t.Errorf("err = %v, want the key redacted", err)
		}
	})
}

func TestKillAndSetTimeout(t *testing.T) {
	f := e2btest.Start(t)
	clock := e2btest.NewClock(t0)
	f.SetClock(clock.Now)
	c := newClient(t, f)
	ctx := context.Background()

	s, err := c.Create(ctx, sandbox.Meta{RunID: "r"})
	if err != nil {
		t.Fatal(err)
	}
	// The timeout is absolute from now: it shortens as well as extends.
	clock.Advance(10 * time.Second)
	if err := c.SetTimeout(ctx, s.ID(), 5*time.Second); err != nil {
		t.Fatal(err)
	}
	if info, _ := f.Sandbox(s.ID()); !info.EndAt.Equal(t0.Add(15 * time.Second)) {
		t.Errorf("EndAt = %v after SetTimeout(5s) at +10s", info.EndAt)
	}
	clock.Advance(5 * time.Second)
	if err := c.SetTimeout(ctx, s.ID(), time.Minute); !errors.Is(err, e2b.ErrNotFound) {
		t.Errorf("SetTimeout after expiry: %v, want ErrNotFound", err)
	}
	if err := c.SetTimeout(ctx, s.ID(), -time.Second); err == nil {
		t.Error("a negative timeout was sent")
	}
	if err := s.Kill(ctx); err != nil {
		t.Errorf("Kill of an expired sandbox: %v, want success", err)
	}

	s2, err := c.Create(ctx, sandbox.Meta{})
	if err != nil {
		t.Fatal(err)
	}
	if err := s2.Kill(ctx); err != nil {
		t.Fatal(err)
	}
	if kills := f.Kills(); len(kills) != 1 || kills[0] != s2.ID() {
		t.Errorf("kills = %v, want [%s]", kills, s2.ID())
	}
	if f.Alive() != 0 {
		t.Errorf("%d sandboxes alive", f.Alive())
	}
}

// KillSandbox tells a kill from a sandbox already gone (404), which the
// reaper counts apart; an error status is an error.
func TestKillSandboxReportsWhetherItWasThere(t *testing.T) {
	f := e2btest.Start(t)
	c := newClient(t, f)
	ctx := context.Background()
	sb, err := c.CreateSandbox(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if found, err := c.KillSandbox(ctx, sb.SandboxID); !found || err != nil {
		t.Fatalf("first kill: found %v, %v", found, err)
	}
	if found, err := c.KillSandbox(ctx, sb.SandboxID); found || err != nil {
		t.Fatalf("second kill: found %v, %v; want gone, no error", found, err)
	}
	sb, _ = c.CreateSandbox(ctx, nil)
	f.FailKill(sb.SandboxID, http.StatusInternalServerError)
	var apiErr *e2b.APIError
	if found, err := c.KillSandbox(ctx, sb.SandboxID); found || !errors.As(err, &apiErr) || apiErr.Status != 500 {
		t.Fatalf("kill answered 500: found %v, %v", found, err)
	}
	if _, ok := f.Sandbox(sb.SandboxID); !ok {
		t.Error("a kill that answered 500 killed the sandbox")
	}
}

func TestListFollowsEveryPage(t *testing.T) {
	f := e2btest.Start(t)
	clock := e2btest.NewClock(t0)
	f.SetClock(clock.Now)
	c := newClient(t, f)
	ctx := context.Background()

	var ours []string
	for i := range 7 {
		clock.Advance(time.Second)
		md := e2b.Metadata(e2btest.DefaultStage, "run", "u", "i", t0)
		md["note"] = "a&b=c d/é" // survives the double encoding
		if i == 6 {
			md["note"] = "other"
		}
		sb, err := c.CreateSandbox(ctx, md)
		if err != nil {
			t.Fatal(err)
		}
		if i < 6 {
			ours = append(ours, sb.SandboxID)
		}
	}
	clock.Advance(time.Second)
	if _, err := c.CreateSandbox(ctx, map[string]string{"app": "someone-else"}); err != nil {
		t.Fatal(err)
	}

	q := e2b.ListQuery{
		Metadata: map[string]string{e2b.MetaApp: e2b.AppName, "note": "a&b=c d/é"},
		State:    []string{e2b.StateRunning},
		Order:    "asc",
		Limit:    4,
	}
	var pages []e2b.Page
	for p, err := range c.Pages(ctx, q) {
		if err != nil {
			t.Fatal(err)
		}
		pages = append(pages, p)
	}
	if len(pages) != 2 || len(pages[0].Sandboxes) != 4 || len(pages[1].Sandboxes) != 2 || pages[1].NextToken != "" {
		t.Fatalf("pages: %d (%+v)", len(pages), pages)
	}
	if pages[0].TotalRunning != 6 {
		t.Errorf("TotalRunning = %d, want 6", pages[0].TotalRunning)
	}

	all, err := c.List(ctx, q)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, s := range all {
		got = append(got, s.SandboxID)
	}
	if !reflect.DeepEqual(got, ours) {
		t.Errorf("List = %v, want %v in start order", got, ours)
	}

	q.Order = "desc"
	q.State = []string{e2b.StatePaused}
	if none, err := c.List(ctx, q); err != nil || len(none) != 0 {
		t.Errorf("paused: %v, %v; want none", none, err)
	}
}

func TestListQueryEncoding(t *testing.T) {
	var raw []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		raw = append(raw, r.URL.RawQuery)
		if len(raw) == 1 {
			w.Header().Set("X-Next-Token", "tok/1")
		}
		_, _ = w.Write([]byte("[]"))
	}))
	defer srv.Close()
	c, err := e2b.New(e2b.Config{APIKey: "k", Stage: "test", APIURL: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.List(context.Background(), e2b.ListQuery{
		Metadata: map[string]string{"app": "commonly turns", "runId": "r/1"},
		State:    []string{"running", "paused"},
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"metadata=app%3Dcommonly%2Bturns%26runId%3Dr%252F1&state=running,paused",
		"metadata=app%3Dcommonly%2Bturns%26runId%3Dr%252F1&nextToken=tok%2F1&state=running,paused",
	}
	if !reflect.DeepEqual(raw, want) {
		t.Errorf("queries\n got %q\nwant %q", raw, want)
	}
}

func TestListRejectsBadQueriesAndLoopingTokens(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Next-Token", "same")
		_, _ = w.Write([]byte("[]"))
	}))
	defer srv.Close()
	c, err := e2b.New(e2b.Config{APIKey: "k", Stage: "test", APIURL: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.List(context.Background(), e2b.ListQuery{}); err == nil || !strings.Contains(err.Error(), "repeats") {
		t.Errorf("looping token: err = %v", err)
	}
	for _, q := range []e2b.ListQuery{{Limit: 101}, {Order: "up"}, {State: []string{"dead"}}} {
		if _, err := c.ListPage(context.Background(), q, ""); err == nil {
			t.Errorf("query %+v accepted", q)
		}
	}
}

func TestExecute(t *testing.T) {
	f := e2btest.Start(t)
	c := newClient(t, f)
	ctx := context.Background()
	s, err := c.Create(ctx, sandbox.Meta{})
	if err != nil {
		t.Fatal(err)
	}
	f.OnExecute(func(id, lang, code string, w *e2btest.StreamWriter) {
		w.Stdout("hello ")
		w.Keepalive() // silence in the code: keepalives only
		w.Keepalive()
		w.Raw(`{"type": "new_kind_of_line"}`)
		w.Stdout("wörld\n")
		w.Stderr("careful\n")
		w.Result(lang + ":" + code)
		w.Error("ValueError", "bad", "\x1b[0;31mTraceback\x1b[0m")
	})
	got, err := s.Execute(ctx, sandbox.JavaScript, "1+1")
	if err != nil {
		t.Fatal(err)
	}
	want := sandbox.Execution{
		Stdout: "hello wörld\n", Stderr: "careful\n", Results: []string{"javascript:1+1"},
		Error: &sandbox.ExecError{Name: "ValueError", Value: "bad", Traceback: "\x1b[0;31mTraceback\x1b[0m"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got  %+v\nwant %+v", got, want)
	}

	calls := f.Executions()
	if len(calls) != 1 {
		t.Fatalf("%d executions", len(calls))
	}
	call := calls[0]
	if !reflect.DeepEqual(call.Body, map[string]any{"code": "1+1", "language": "javascript"}) {
		t.Errorf("execute body = %v: nothing but code and language may be sent", call.Body)
	}
	if call.Header.Get("X-Access-Token") == "" || call.Header.Get("E2B-Traffic-Access-Token") == "" ||
		call.Header.Get("E2b-Sandbox-Port") != "49999" || call.Header.Get("E2b-Sandbox-Id") != s.ID() {
		t.Errorf("execute headers = %v", call.Header)
	}
	if call.Header.Get("X-API-Key") != "" {
		t.Error("the API key was sent to the sandbox host")
	}
}

func TestExecuteLost(t *testing.T) {
	tests := []struct {
		name   string
		before func(f *e2btest.Fake, id string, clock *e2btest.Clock)
		play   e2btest.ExecuteFunc
	}{
		{
			name:   "sandbox vanished: 502 from the proxy",
			before: func(f *e2btest.Fake, id string, _ *e2btest.Clock) { f.Vanish(id) },
		},
		{
			name:   "sandbox expired: 502 from the proxy",
			before: func(_ *e2btest.Fake, _ string, clock *e2btest.Clock) { clock.Advance(sandbox.Lifetime) },
		},
		{
			name: "sandbox dies mid-stream",
			play: func(_, _, _ string, w *e2btest.StreamWriter) { w.Stdout("partial"); w.KillSandbox() },
		},
		{
			name: "stream ends without end_of_execution",
			play: func(_, _, _ string, w *e2btest.StreamWriter) { w.Stdout("partial"); w.EndEarly() },
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := e2btest.Start(t)
			clock := e2btest.NewClock(t0)
			f.SetClock(clock.Now)
			f.OnExecute(tt.play)
			c := newClient(t, f)
			s, err := c.Create(context.Background(), sandbox.Meta{})
			if err != nil {
				t.Fatal(err)
			}
			if tt.before != nil {
				tt.before(f, s.ID(), clock)
			}
			_, err = s.Execute(context.Background(), sandbox.Python, "x")
			if !errors.Is(err, sandbox.ErrLost) || errors.Is(err, sandbox.ErrTimeout) {
				t.Fatalf("err = %v, want ErrLost", err)
			}
		})
	}

	t.Run("killed through the API during a silent run", func(t *testing.T) {
		f := e2btest.Start(t)
		c := newClient(t, f)
		s, err := c.Create(context.Background(), sandbox.Meta{})
		if err != nil {
			t.Fatal(err)
		}
		started := make(chan struct{})
		f.OnExecute(func(_, _, _ string, w *e2btest.StreamWriter) { close(started); w.Hang() })
		go func() {
			<-started
			_ = c.Kill(context.Background(), s.ID())
		}()
		if _, err := s.Execute(context.Background(), sandbox.Python, "x"); !errors.Is(err, sandbox.ErrLost) {
			t.Fatalf("err = %v, want ErrLost", err)
		}
	})

	t.Run("connection refused", func(t *testing.T) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := ln.Addr().String()
		ln.Close()
		c, err := e2b.New(e2b.Config{APIKey: "k", Stage: "test", SandboxURL: "http://" + addr})
		if err != nil {
			t.Fatal(err)
		}
		_, err = c.Execute(context.Background(), e2b.Handle{SandboxID: "sbx"}, sandbox.Python, "1")
		if !errors.Is(err, sandbox.ErrLost) {
			t.Fatalf("err = %v, want ErrLost", err)
		}
	})
}

func TestExecuteDeadlineInterruptsTheKernel(t *testing.T) {
	f := e2btest.Start(t)
	c := newClient(t, f)
	s, err := c.Create(context.Background(), sandbox.Meta{})
	if err != nil {
		t.Fatal(err)
	}
	hung := make(chan struct{})
	f.OnExecute(func(_, _, _ string, w *e2btest.StreamWriter) { w.Stdout("working\n"); w.Hang(); close(hung) })

	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	got, err := s.Execute(ctx, sandbox.Python, "while True: pass")
	if !errors.Is(err, sandbox.ErrTimeout) || errors.Is(err, sandbox.ErrLost) {
		t.Fatalf("err = %v, want ErrTimeout", err)
	}
	if got.Stdout != "working\n" {
		t.Errorf("partial stdout = %q", got.Stdout)
	}
	<-hung // the fake has seen the client go
	if got := f.Interrupts(); len(got) != 1 || got[0] != s.ID() {
		t.Errorf("interrupts = %v, want the kernel of %s", got, s.ID())
	}

	// The kernel was interrupted, not the sandbox: the next run works.
	f.OnExecute(func(_, _, _ string, w *e2btest.StreamWriter) { w.Stdout("again") })
	if got, err := s.Execute(context.Background(), sandbox.Python, "print('again')"); err != nil || got.Stdout != "again" {
		t.Fatalf("next run: %+v, %v", got, err)
	}
}

func TestExecuteCancelledIsNeitherTimeoutNorLoss(t *testing.T) {
	f := e2btest.Start(t)
	c := newClient(t, f)
	s, err := c.Create(context.Background(), sandbox.Meta{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	f.OnExecute(func(_, _, _ string, w *e2btest.StreamWriter) { cancel(); w.Hang() })
	_, err = s.Execute(ctx, sandbox.Python, "1")
	if !errors.Is(err, context.Canceled) || errors.Is(err, sandbox.ErrTimeout) || errors.Is(err, sandbox.ErrLost) {
		t.Fatalf("err = %v, want context.Canceled only", err)
	}
}

func TestExecuteErrorsNeverCarryTokens(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "bad tokens "+r.Header.Get("X-Access-Token")+" "+r.Header.Get("E2B-Traffic-Access-Token"), http.StatusUnauthorized)
	}))
	defer srv.Close()
	c, err := e2b.New(e2b.Config{APIKey: "k", Stage: "test", SandboxURL: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	h := e2b.Handle{SandboxID: "sbx", EnvdAccessToken: "envd-secret", TrafficAccessToken: "traffic-secret"}
	_, err = c.Execute(context.Background(), h, sandbox.Python, "1")
	var apiErr *e2b.APIError
	if !errors.As(err, &apiErr) || apiErr.Status != http.StatusUnauthorized || errors.Is(err, sandbox.ErrLost) {
		t.Fatalf("err = %v, want a 401 APIError", err)
	}
	if strings.Contains(err.Error(), "envd-secret") || strings.Contains(err.Error(), "traffic-secret") {
		t.Errorf("error carries a token: %v", err)
	}
}

// Tokens are scrubbed before the message is cut: a token straddling the
// cut leaves no fragment, and the error code is scrubbed too.
func TestExecuteErrorsScrubBeforeTheCut(t *testing.T) {
	const envd, traffic = "envd-secret-0123456789", "traffic-secret-0123456789"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		msg := strings.Repeat("x", 290) + r.Header.Get("X-Access-Token") + strings.Repeat("y", 50)
		_, _ = w.Write([]byte(`{"code":400,"message":"` + msg + `","error_code":"bad_` + r.Header.Get("E2B-Traffic-Access-Token") + `"}`))
	}))
	defer srv.Close()
	c, err := e2b.New(e2b.Config{APIKey: "k", Stage: "test", SandboxURL: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	h := e2b.Handle{SandboxID: "sbx", EnvdAccessToken: envd, TrafficAccessToken: traffic}
	_, err = c.Execute(context.Background(), h, sandbox.Python, "1")
	var apiErr *e2b.APIError
	if !errors.As(err, &apiErr) || apiErr.Status != http.StatusBadRequest {
		t.Fatalf("err = %v, want a 400 APIError", err)
	}
	if want := strings.Repeat("x", 290) + "[redacted]…"; apiErr.Message != want {
		t.Errorf("message = %q, want %q", apiErr.Message, want)
	}
	if apiErr.ErrorCode != "bad_[redacted]" {
		t.Errorf("error code = %q", apiErr.ErrorCode)
	}
	for _, frag := range []string{"envd-", "traffic-"} {
		if strings.Contains(err.Error(), frag) {
			t.Errorf("error carries part of a token (%q): %v", frag, err)
		}
	}
}
