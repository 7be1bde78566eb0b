package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"

	"github.com/commonly/runtime/infra/awslocal/apigatewaylocal"
	"github.com/commonly/runtime/infra/console"
	"github.com/commonly/runtime/internal/chromiumtest"
)

// flakyProxy stands between the browser and the local stack as a network
// that drops a connection: it forwards everything, and cuts the first
// event stream that sends a tool.started event right after it, as a
// dropped connection would. It records each event stream's Last-Event-ID.
type flakyProxy struct {
	srv      *httptest.Server
	upstream *url.URL
	mu       sync.Mutex
	cutAfter string   // the id of the event the stream was cut after
	resumes  []string // Last-Event-ID of each event stream asked for
	// seen, if set, waits until the page shows the event of an id: the
	// cut comes once the page has it, so the resume must start after it.
	seen func(id string)
}

func newFlakyProxy(t *testing.T, base string) *flakyProxy {
	t.Helper()
	up, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	p := &flakyProxy{upstream: up}
	rp := &httputil.ReverseProxy{
		// The Host the browser sent: the console's pages check it.
		Rewrite:       func(r *httputil.ProxyRequest) { r.SetURL(up); r.Out.Host = r.In.Host },
		FlushInterval: -1,
	}
	p.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !strings.HasSuffix(r.URL.Path, "/events") {
			rp.ServeHTTP(w, r)
			return
		}
		p.mu.Lock()
		p.resumes = append(p.resumes, r.Header.Get("Last-Event-ID"))
		cut := p.cutAfter == ""
		p.mu.Unlock()
		p.stream(w, r, cut)
	}))
	t.Cleanup(p.srv.Close)
	return p
}

// stream forwards an event stream line by line; when cut, it drops the
// connection after the first tool.started event.
func (p *flakyProxy) stream(w http.ResponseWriter, r *http.Request, cut bool) {
	req, _ := http.NewRequestWithContext(r.Context(), r.Method, p.upstream.String()+r.URL.RequestURI(), nil)
	req.Header = r.Header.Clone()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	defer resp.Body.Close()
	for k, v := range resp.Header {
		w.Header()[k] = v
	}
	w.WriteHeader(resp.StatusCode)
	flush := w.(http.Flusher)
	sc := bufio.NewScanner(resp.Body)
	id, started := "", false
	for sc.Scan() {
		line := sc.Text()
		_, _ = io.WriteString(w, line+"\n")
		flush.Flush()
		switch {
		case strings.HasPrefix(line, "id: "):
			id = strings.TrimPrefix(line, "id: ")
		case line == "event: tool.started":
			started = true
		case line == "" && started && cut:
			p.mu.Lock()
			p.cutAfter = id
			seen := p.seen
			p.mu.Unlock()
			if seen != nil {
				seen(id)
			}
			panic(http.ErrAbortHandler) // the connection drops, mid-run
		}
	}
}

// browser is a headless Chromium (chromiumtest, as the usage report's
// test drives it) with every console message and every request the page
// made recorded.
type browser struct {
	ctx      context.Context
	mu       sync.Mutex
	console  []string
	requests []string
}

func newBrowser(t *testing.T) *browser {
	t.Helper()
	ctx := chromiumtest.New(t, 1400, 1000, 4*time.Minute)
	b := &browser{ctx: ctx}
	messages := chromedp.Console(ctx)
	requests := chromedp.Events(ctx, network.RequestWillBeSent)
	go func() {
		for m, err := range messages {
			if err != nil {
				return
			}
			// The stream the test's proxy cuts is logged as a failed
			// load: that one is the test's doing, not the page's.
			cut := m.Source == "network" && strings.Contains(m.Text, "ERR_INCOMPLETE_CHUNKED_ENCODING") && strings.HasSuffix(m.URL, "/events")
			if (m.Type == chromedp.ConsoleError || m.Type == chromedp.ConsoleWarning || m.Type == chromedp.ConsoleException || m.Type == "assert") && !cut {
				b.mu.Lock()
				b.console = append(b.console, m.String()+" ("+m.URL+")")
				b.mu.Unlock()
			}
		}
	}()
	go func() {
		for ev, err := range requests {
			if err != nil {
				return
			}
			b.mu.Lock()
			b.requests = append(b.requests, ev.Request.URL)
			b.mu.Unlock()
		}
	}()
	return b
}

// do runs steps, each wait bounded by a minute; on failure the page's
// picture and console go to the test's output.
func (b *browser) do(t *testing.T, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, time.Minute)
	defer cancel()
	if err := chromedp.Do(ctx, steps...); err != nil {
		b.mu.Lock()
		t.Logf("console: %q", b.console)
		b.mu.Unlock()
		if status, err := chromedp.Run(b.ctx, chromedp.Evaluate[string](`document.querySelector('#status') ? document.querySelector('#status').textContent : document.title`)); err == nil {
			t.Logf("the page says: %s", status)
		}
		b.screenshot(t, "failure.png")
		t.Fatal(err)
	}
}

func eval[T any](t *testing.T, b *browser, js string) T {
	t.Helper()
	v, err := chromedp.Run(b.ctx, chromedp.Evaluate[T](js))
	if err != nil {
		t.Fatalf("%s: %v", js, err)
	}
	return v
}

// screenshot keeps the page's picture with the test's artifacts
// (go test -artifacts; make unit puts them in bin/test-artifacts).
func (b *browser) screenshot(t *testing.T, name string) {
	t.Helper()
	shot, err := chromedp.Run(b.ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.ArtifactDir(), name)
	if err := os.WriteFile(path, shot, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot: %s", path)
}

// checkClean fails on any console error or warning, and on any request
// the page made to anything but origin.
func (b *browser) checkClean(t *testing.T, origin string) {
	t.Helper()
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.console) > 0 {
		t.Errorf("console: %q", b.console)
	}
	for _, u := range b.requests {
		if !strings.HasPrefix(u, origin+"/") && !strings.HasPrefix(u, "data:") {
			t.Errorf("a request left the stack's origin %s: %s", origin, u)
		}
	}
	if len(b.requests) == 0 {
		t.Error("no request was recorded")
	}
}

// apiGet reads an API route with a token, into v.
func apiGet(t *testing.T, base, token, path string, v any) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, base+path, nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d %s", path, resp.StatusCode, body)
	}
	if err := json.Unmarshal(body, v); err != nil {
		t.Fatal(err)
	}
}

type shownEvent struct {
	ID         int64  `json:"id"`
	Type       string `json:"type"`
	CostMicros string `json:"costMicros"`
	Status     string `json:"status"`
}

const readShownEvents = `[...document.querySelectorAll('#events li')].map(li => ({id: Number(li.dataset.id), type: li.dataset.type, costMicros: li.dataset.costMicros || "", status: li.dataset.status || ""}))`

// sendFromForm sends a turn through the console's form and returns the
// run the page opened, once its run.finished is shown.
func sendFromForm(t *testing.T, b *browser, installID, as, message string) (string, []shownEvent) {
	t.Helper()
	runID := openFromForm(t, b, installID, as, message)
	b.do(t, chromedp.WaitVisible(chromedp.CSS(`#events li[data-type="run.finished"]`)))
	return runID, eval[[]shownEvent](t, b, readShownEvents)
}

// openFromForm sends a turn through the console's form and returns the
// run the page opened.
func openFromForm(t *testing.T, b *browser, installID, as, message string) string {
	t.Helper()
	before := eval[string](t, b, `document.querySelector('#run-id').textContent`)
	b.do(t, chromedp.WaitReady(chromedp.CSS(fmt.Sprintf(`#turn-form select[name=install] option[value=%q]`, installID))))
	set := fmt.Sprintf(`(() => { const f = document.querySelector('#turn-form');
		f.elements.install.value = %q; f.elements.install.dispatchEvent(new Event('change'));
		f.elements.as.value = %q; f.elements.message.value = %q;
		return f.elements.install.value + ' ' + f.elements.as.value; })()`, installID, as, message)
	if got := eval[string](t, b, set); got != installID+" "+as {
		t.Fatalf("the form holds %q", got)
	}
	b.do(t, chromedp.Click(chromedp.CSS(`#turn-form button[type=submit]`)))
	deadline := time.Now().Add(30 * time.Second)
	runID := before
	for runID == before {
		if time.Now().After(deadline) {
			t.Fatalf("no run opened; the form says %q", eval[string](t, b, `document.querySelector('#send-result').textContent`))
		}
		time.Sleep(100 * time.Millisecond)
		runID = eval[string](t, b, `document.querySelector('#run-id').textContent`)
	}
	return runID
}

// checkEvents: the page showed the run's events once each, in order, as
// the stream replays them (the events route, read here by the test).
func checkEvents(t *testing.T, base, token, runID string, shown []shownEvent) {
	t.Helper()
	var want []shownEvent
	if _, err := readRunEvents(context.Background(), base, token, runID, "", func(e sseEvent) {
		var id int64
		fmt.Sscan(e.ID, &id)
		want = append(want, shownEvent{ID: id, Type: e.Type})
	}); err != nil {
		t.Fatal(err)
	}
	got := make([]shownEvent, len(shown))
	for i, e := range shown {
		got[i] = shownEvent{ID: e.ID, Type: e.Type}
	}
	if !slices.Equal(got, want) {
		t.Errorf("run %s: the page shows\n%v\nthe stream holds\n%v", runID, got, want)
	}
	for i, e := range got {
		if e.ID != int64(i+1) {
			t.Errorf("run %s: line %d shows event %d", runID, i+1, e.ID)
			break
		}
	}
}

// The console in headless Chromium against the local stack, as a
// developer uses it: it loads with no console error or warning and no
// request leaving the stack; a turn sent from the form shows its events
// in order, once each, even through a dropped connection (resumed with
// Last-Event-ID), and ends at the cost GET /v1/runs/{runId} gives; a
// failing turn shows its failure; the trace is drawn from the stack's
// spans; the runs list and the usage figures are the API's; a narrow
// window keeps everything in its width; the reference at /docs lists
// every operation of the document with "try it" pointed at the stack.
// Screenshots go to the test's artifacts.
func TestConsoleInChromium(t *testing.T) {
	client := filepath.Join(repoRoot(), "api", "client-example", "dist", "client.js")
	swagger := filepath.Join(repoRoot(), "infra", "console", "web", "node_modules", "swagger-ui-dist", "swagger-ui-bundle.js")
	for _, f := range []string{client, swagger} {
		if _, err := os.Stat(f); err != nil {
			t.Fatalf("%s: %v: `make console-deps` builds the typed client and installs Swagger UI (make test runs make api and console-npm)", f, err)
		}
	}
	traces := filepath.Join(t.TempDir(), "spans.jsonl")
	s := startLocal(t, map[string]string{"TRACES_FILE": traces})
	proxy := newFlakyProxy(t, s.base)
	origin := proxy.srv.URL
	admin, _ := apigatewaylocal.MintServiceToken(s.secret, "test", time.Now())
	user, _ := apigatewaylocal.MintToken(s.secret, "demo-user", nil, time.Hour, time.Now())
	// An install on the Durable Object runtime, whose stand-in fails a
	// message holding [do:fail].
	req, _ := http.NewRequest(http.MethodPut, s.base+"/v1/installs/flaky-install", strings.NewReader(`{"userId":"demo-user","podId":"demo-pod","agentName":"flaky","engine":"durable-object"}`))
	req.Header.Set("Authorization", "Bearer "+admin)
	req.Header.Set("Content-Type", "application/json")
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != http.StatusCreated {
		t.Fatalf("the durable-object install: %v %v", resp, err)
	}

	b := newBrowser(t)
	proxy.seen = func(id string) {
		deadline := time.Now().Add(20 * time.Second)
		for time.Now().Before(deadline) {
			if v, err := chromedp.Run(b.ctx, chromedp.Evaluate[bool](fmt.Sprintf(`!!document.querySelector('#events li[data-id="%s"]')`, id))); err == nil && v {
				return
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	b.do(t, chromedp.Navigate(origin+"/"),
		chromedp.WaitVisible(chromedp.CSS(`#installs tr[data-install="flaky-install"] .engine-in-effect`)),
		chromedp.WaitVisible(chromedp.CSS(`#usage tr[data-user="demo-user"]`)))
	if got := eval[string](t, b, `document.querySelector('#installs tr[data-install="flaky-install"] .engine-in-effect').textContent`); got != "durable-object" {
		t.Errorf("flaky-install shown in effect on %q", got)
	}

	// A code turn, its stream dropped once mid-run.
	code := "Count to three, slowly.\n\n```python\nimport time\nfor i in range(1, 4):\n    print(i, flush=True)\n    time.sleep(1)\n```"
	codeRun, shown := sendFromForm(t, b, "demo-install", "demo-user", code)
	checkEvents(t, s.base, user, codeRun, shown)
	var run struct {
		Status     string `json:"status"`
		CostMicros int64  `json:"costMicros"`
		TraceID    string `json:"traceId"`
	}
	apiGet(t, s.base, user, "/v1/runs/"+codeRun, &run)
	last := shown[len(shown)-1]
	if last.Type != "run.finished" || last.Status != "succeeded" || last.CostMicros != fmt.Sprint(run.CostMicros) || run.CostMicros <= 0 {
		t.Errorf("the page ends the run %+v; GET /v1/runs/%s gives %+v", last, codeRun, run)
	}
	if !slices.ContainsFunc(shown, func(e shownEvent) bool { return e.Type == "tool.finished" }) ||
		!slices.ContainsFunc(shown, func(e shownEvent) bool { return e.Type == "sandbox.killed" }) {
		t.Errorf("the code turn's transcript lacks its tool or sandbox: %v", shown)
	}
	proxy.mu.Lock()
	cut, resumes := proxy.cutAfter, slices.Clone(proxy.resumes)
	proxy.mu.Unlock()
	if cut == "" || len(resumes) < 2 || resumes[0] != "" || resumes[1] != cut {
		t.Errorf("the stream was cut after event %q; the page asked from %q: want a resume from the cut", cut, resumes)
	}
	b.do(t, chromedp.WaitVisible(chromedp.CSS(fmt.Sprintf(`.run-cost[data-cost-micros="%d"]`, run.CostMicros))))
	b.screenshot(t, "console-code-turn.png")

	// Its trace, from the stack's span file.
	b.do(t, chromedp.Click(chromedp.CSS(`#tab-trace`)), chromedp.WaitVisible(chromedp.CSS(`#waterfall .span[data-name="turn.run"]`)))
	spans, err := console.ReadTrace(traces, run.TraceID)
	if err != nil {
		t.Fatal(err)
	}
	names := eval[[]string](t, b, `[...document.querySelectorAll('#waterfall .span')].map(s => s.dataset.name)`)
	if len(names) != len(spans) || !slices.Contains(names, "chat offline-demo") || !slices.Contains(names, "execute_tool commonly_run_code") {
		t.Errorf("the waterfall draws %d spans %v; the trace has %d", len(names), names, len(spans))
	}
	b.screenshot(t, "console-trace.png")

	// A failing turn, on the Durable Object runtime.
	failRun, shown := sendFromForm(t, b, "flaky-install", "demo-user", "[do:fail] please")
	checkEvents(t, s.base, user, failRun, shown)
	if last := shown[len(shown)-1]; last.Status != "failed" {
		t.Errorf("the failing turn ends %+v", last)
	}
	b.do(t, chromedp.WaitVisible(chromedp.CSS(`#run-summary .badge.failed`)))
	b.screenshot(t, "console-failing-turn.png")

	// The runs, newest first, as the API lists them.
	var page struct {
		Runs []struct {
			RunID      string `json:"runId"`
			Status     string `json:"status"`
			CostMicros int64  `json:"costMicros"`
		} `json:"runs"`
	}
	apiGet(t, s.base, admin, "/v1/users/demo-user/runs?limit=2", &page)
	if len(page.Runs) != 2 || page.Runs[0].RunID != failRun || page.Runs[1].RunID != codeRun {
		t.Fatalf("the API lists %+v", page.Runs)
	}
	waitFor(t, "the runs list shows the two turns newest first", func() (bool, string) {
		rows := eval[[][]string](t, b, `[...document.querySelectorAll('#runs tbody tr')].slice(0, 2).map(r => [r.dataset.run, r.dataset.status, r.dataset.costMicros])`)
		want := [][]string{{failRun, "failed", fmt.Sprint(page.Runs[0].CostMicros)}, {codeRun, "succeeded", fmt.Sprint(page.Runs[1].CostMicros)}}
		return fmt.Sprint(rows) == fmt.Sprint(want), fmt.Sprintf("rows %v, want %v", rows, want)
	})

	// The usage figures are the API's, once the alarm has counted.
	waitFor(t, "the usage shown equals the API's", func() (bool, string) {
		var u struct {
			TurnsUsed, TurnsLimit, CostMicros int64
		}
		apiGet(t, s.base, admin, "/v1/users/demo-user/usage", &u)
		shown := eval[[]string](t, b, `(() => { const r = document.querySelector('#usage tr[data-user="demo-user"]'); return [r.dataset.turnsUsed, r.dataset.turnsLimit, r.dataset.costMicros]; })()`)
		want := []string{fmt.Sprint(u.TurnsUsed), fmt.Sprint(u.TurnsLimit), fmt.Sprint(u.CostMicros)}
		return slices.Equal(shown, want) && u.CostMicros > 0, fmt.Sprintf("shown %v, the API %v", shown, want)
	})
	b.checkClean(t, origin)

	// A narrow window: nothing wider than it.
	b.do(t, chromedp.EmulateViewport(390, 844, chromedp.EmulateMobile))
	waitFor(t, "the page fits a narrow window", func() (bool, string) {
		w := eval[[]float64](t, b, `[document.documentElement.scrollWidth, window.innerWidth]`)
		return w[0] <= w[1], fmt.Sprintf("the page is %v px wide in a %v px window", w[0], w[1])
	})
	b.screenshot(t, "console-narrow.png")
	b.do(t, chromedp.EmulateReset(), chromedp.EmulateViewport(1400, 1000))

	// A long code run, stopped with the page's Stop button: the run ends
	// cancelled on the page as through the API.
	sleepy := "Wait for me.\n\n```python\nimport time\nprint('started', flush=True)\ntime.sleep(30)\n```"
	stopped := openFromForm(t, b, "demo-install", "demo-user", sleepy)
	b.do(t, chromedp.WaitVisible(chromedp.CSS(`#events li[data-type="tool.output"]`)),
		chromedp.Click(chromedp.CSS(`#run-stop`)),
		chromedp.WaitVisible(chromedp.CSS(`#events li[data-type="run.finished"][data-status="cancelled"]`)),
		chromedp.WaitVisible(chromedp.CSS(`#run-summary .badge.cancelled`)))
	var cancelled struct {
		Status string `json:"status"`
	}
	apiGet(t, s.base, user, "/v1/runs/"+stopped, &cancelled)
	if cancelled.Status != "cancelled" {
		t.Errorf("the stopped run is %q through the API", cancelled.Status)
	}
	if hidden := eval[bool](t, b, `document.querySelector('#run-stop').hidden`); !hidden {
		t.Error("the Stop button is still offered on a cancelled run")
	}

	// The reference: every operation of the document, "try it" at this stack.
	var doc struct {
		Paths map[string]map[string]json.RawMessage `json:"paths"`
	}
	apiGet(t, s.base, user, "/v1/openapi.json", &doc)
	var want []string
	for path, ops := range doc.Paths {
		for method := range ops {
			switch method {
			case "get", "put", "post", "delete", "patch", "head", "options":
				want = append(want, strings.ToUpper(method)+" "+path)
			}
		}
	}
	slices.Sort(want)
	b.do(t, chromedp.Navigate(origin+"/docs"), chromedp.WaitVisible(chromedp.CSS(`.opblock`)))
	waitFor(t, "the reference lists every operation", func() (bool, string) {
		ops := eval[[]string](t, b, `[...new Set([...document.querySelectorAll('.opblock')].map(o => o.querySelector('.opblock-summary-method').textContent + ' ' + o.querySelector('.opblock-summary-path').dataset.path))].sort()`)
		return slices.Equal(ops, want), fmt.Sprintf("listed %v\nthe document has %v", ops, want)
	})
	if got := eval[string](t, b, `document.querySelector('.servers select').value`); got != origin {
		t.Errorf(`"try it" sends to %q, not this stack %q`, got, origin)
	}
	b.screenshot(t, "reference.png")
	b.checkClean(t, origin)
}

// waitFor polls cond for 20 s.
func waitFor(t *testing.T, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		ok, detail := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %s", what, detail)
		}
		time.Sleep(250 * time.Millisecond)
	}
}
