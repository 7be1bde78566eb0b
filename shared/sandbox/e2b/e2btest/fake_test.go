package e2btest

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"
)

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// do sends a raw request: these tests check the fake against the spec,
// independently of our client.
func do(t *testing.T, f *Fake, method, path, body string, hdr map[string]string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest(method, f.URL+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

var key = map[string]string{"X-API-Key": DefaultAPIKey}

func createRaw(t *testing.T, f *Fake, body string) map[string]any {
	t.Helper()
	resp, b := do(t, f, "POST", "/sandboxes", body, key)
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("create: %d %s", resp.StatusCode, b)
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(b), &m); err != nil {
		t.Fatal(err)
	}
	return m
}

func TestCreateFollowsTheSpec(t *testing.T) {
	f := Start(t)
	clock := NewClock(t0)
	f.SetClock(clock.Now)

	tests := []struct {
		name   string
		hdr    map[string]string
		body   string
		status int
	}{
		{"no API key", nil, `{"templateID":"base"}`, 401},
		{"wrong API key", map[string]string{"X-API-Key": "e2b_other"}, `{"templateID":"base"}`, 401},
		{"no templateID", key, `{"timeout":10}`, 400},
		{"non-string metadata", key, `{"templateID":"base","metadata":{"n":1}}`, 400},
		{"negative timeout", key, `{"templateID":"base","timeout":-1}`, 400},
		{"not JSON", key, `{`, 400},
		{"minimal", key, `{"templateID":"base"}`, 201},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, body := do(t, f, "POST", "/sandboxes", tt.body, tt.hdr)
			if resp.StatusCode != tt.status {
				t.Fatalf("status %d (%s), want %d", resp.StatusCode, body, tt.status)
			}
			var e struct {
				Code    int    `json:"code"`
				Message string `json:"message"`
			}
			if tt.status != 201 && (json.Unmarshal([]byte(body), &e) != nil || e.Code != tt.status || e.Message == "") {
				t.Errorf("error body %q is not an Error", body)
			}
		})
	}

	insecure := createRaw(t, f, `{"templateID":"base"}`)
	if _, ok := insecure["envdAccessToken"]; ok {
		t.Error("envdAccessToken issued without secure")
	}
	if insecure["trafficAccessToken"] != nil {
		t.Error("trafficAccessToken issued with public traffic open")
	}
	info, _ := f.Sandbox(insecure["sandboxID"].(string))
	if info.EndAt.Sub(info.StartedAt) != 15*time.Second {
		t.Errorf("default TTL = %v, want the API's 15s", info.EndAt.Sub(info.StartedAt))
	}

	secure := createRaw(t, f, `{"templateID":"code-interpreter-v1","secure":true,"timeout":180,
		"allow_internet_access":false,"network":{"allowPublicTraffic":false},"envVars":{},"metadata":{"a":"b"}}`)
	for _, k := range []string{"envdAccessToken", "trafficAccessToken", "sandboxID", "clientID", "envdVersion", "domain"} {
		if s, _ := secure[k].(string); s == "" {
			t.Errorf("create answer lacks %s: %v", k, secure)
		}
	}
	creates := f.Creates()
	if got := len(creates); got != len(tests)+2 {
		t.Errorf("%d creates recorded, want %d (rejected ones too)", got, len(tests)+2)
	}
	last := creates[len(creates)-1]
	if last.Status != 201 || last.SandboxID != secure["sandboxID"] || last.Body["allow_internet_access"] != false {
		t.Errorf("last create record = %+v", last)
	}
}

func TestCreateFaults(t *testing.T) {
	f := Start(t)
	f.FailCreates(1, 503, "sandbox_capacity_unavailable")
	resp, body := do(t, f, "POST", "/sandboxes", `{"templateID":"base"}`, key)
	if resp.StatusCode != 503 || !strings.Contains(body, `"error_code":"sandbox_capacity_unavailable"`) {
		t.Fatalf("%d %s", resp.StatusCode, body)
	}
	if resp, _ := do(t, f, "POST", "/sandboxes", `{"templateID":"base"}`, key); resp.StatusCode != 201 {
		t.Fatalf("fault outlived its count: %d", resp.StatusCode)
	}
}

func TestKillTimeoutAndExpiry(t *testing.T) {
	f := Start(t)
	clock := NewClock(t0)
	f.SetClock(clock.Now)
	id := createRaw(t, f, `{"templateID":"base","timeout":60,"secure":true}`)["sandboxID"].(string)
	other := createRaw(t, f, `{"templateID":"base","timeout":60}`)["sandboxID"].(string)

	if resp, _ := do(t, f, "POST", "/sandboxes/"+id+"/timeout", `{"timeout":"x"}`, key); resp.StatusCode != 400 {
		t.Errorf("bad timeout body: %d", resp.StatusCode)
	}
	if resp, _ := do(t, f, "POST", "/sandboxes/"+id+"/timeout", `{"timeout":30}`, nil); resp.StatusCode != 401 {
		t.Errorf("timeout without key: %d", resp.StatusCode)
	}
	clock.Advance(50 * time.Second)
	if resp, _ := do(t, f, "POST", "/sandboxes/"+id+"/timeout", `{"timeout":30}`, key); resp.StatusCode != 204 {
		t.Fatalf("timeout: %d", resp.StatusCode)
	}
	clock.Advance(20 * time.Second) // +70s: past the first TTL, within the new one
	if info, ok := f.Sandbox(id); !ok || !info.EndAt.Equal(t0.Add(80*time.Second)) {
		t.Errorf("extended sandbox: %+v %v", info, ok)
	}
	if _, ok := f.Sandbox(other); ok {
		t.Error("a sandbox outlived its TTL")
	}
	clock.Advance(10 * time.Second)
	for _, c := range []struct{ method, path, body string }{
		{"DELETE", "/sandboxes/" + id, ""},
		{"POST", "/sandboxes/" + id + "/timeout", `{"timeout":30}`},
	} {
		if resp, _ := do(t, f, c.method, c.path, c.body, key); resp.StatusCode != 404 {
			t.Errorf("%s %s after expiry: %d, want 404", c.method, c.path, resp.StatusCode)
		}
	}
	live := createRaw(t, f, `{"templateID":"base"}`)["sandboxID"].(string)
	if resp, _ := do(t, f, "DELETE", "/sandboxes/"+live, "", nil); resp.StatusCode != 401 {
		t.Errorf("kill without key: %d", resp.StatusCode)
	}
	if resp, _ := do(t, f, "DELETE", "/sandboxes/"+live, "", key); resp.StatusCode != 204 {
		t.Errorf("kill: %d", resp.StatusCode)
	}
	if resp, _ := do(t, f, "DELETE", "/sandboxes/"+live, "", key); resp.StatusCode != 404 {
		t.Errorf("second kill: %d", resp.StatusCode)
	}
	if k := f.Kills(); len(k) != 1 || k[0] != live || f.Alive() != 0 {
		t.Errorf("kills = %v, alive %d", k, f.Alive())
	}
}

func TestListV2(t *testing.T) {
	f := Start(t)
	clock := NewClock(t0)
	f.SetClock(clock.Now)
	var ids []string
	for i := range 5 {
		clock.Advance(time.Second)
		md := `{"app":"x","n":"` + string(rune('a'+i)) + `"}`
		if i == 4 {
			md = `{"app":"y"}`
		}
		ids = append(ids, createRaw(t, f, `{"templateID":"base","timeout":100,"metadata":`+md+`}`)["sandboxID"].(string))
	}
	clock.Advance(time.Second)
	createRaw(t, f, `{"templateID":"base","timeout":1,"metadata":{"app":"x"}}`) // gone by the list
	clock.Advance(2 * time.Second)

	list := func(q string) (*http.Response, []string) {
		t.Helper()
		resp, body := do(t, f, "GET", "/v2/sandboxes?"+q, "", key)
		if resp.StatusCode != 200 {
			return resp, nil
		}
		var rows []struct {
			SandboxID string `json:"sandboxID"`
			State     string `json:"state"`
		}
		if err := json.Unmarshal([]byte(body), &rows); err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, r := range rows {
			out = append(out, r.SandboxID)
		}
		return resp, out
	}
	md := "metadata=" + url.QueryEscape("app=x")

	resp, got := list(md + "&state=running&order=asc&limit=2")
	if strings.Join(got, ",") != ids[0]+","+ids[1] || resp.Header.Get("X-Total-Running") != "4" {
		t.Fatalf("page 1 = %v, total %q", got, resp.Header.Get("X-Total-Running"))
	}
	next := resp.Header.Get("X-Next-Token")
	resp, got = list(md + "&state=running&order=asc&limit=2&nextToken=" + url.QueryEscape(next))
	if strings.Join(got, ",") != ids[2]+","+ids[3] {
		t.Fatalf("page 2 = %v", got)
	}
	if _, ok := resp.Header["X-Next-Token"]; ok {
		t.Errorf("last page carries X-Next-Token %q", resp.Header.Get("X-Next-Token"))
	}

	if _, got := list(md + "&state=paused"); len(got) != 0 {
		t.Errorf("paused = %v: the fake never pauses", got)
	}
	_, got = list(md + "&state=running,paused")
	if len(got) != 4 || got[0] != ids[3] {
		t.Errorf("both states, default desc = %v", got)
	}
	if _, got := list("metadata=" + url.QueryEscape("app=x&n=c")); strings.Join(got, ",") != ids[2] {
		t.Errorf("AND of pairs = %v", got)
	}
	if resp, _ := list("state=paused"); resp.Header.Get("X-Total-Running") != "" {
		t.Error("X-Total-Running sent when running sandboxes were not asked for")
	}
	for _, q := range []string{"limit=101", "limit=0", "state=dead", "order=up", "nextToken=garbage!", "startedAfter=2026-01-01T00:00:00Z", "template=base"} {
		if resp, _ := list(q); resp.StatusCode != 400 {
			t.Errorf("%s: %d, want 400", q, resp.StatusCode)
		}
	}
	if resp, _ := do(t, f, "GET", "/v2/sandboxes", "", nil); resp.StatusCode != 401 {
		t.Errorf("list without key: %d", resp.StatusCode)
	}
}

func TestExecuteEndpoint(t *testing.T) {
	f := Start(t)
	created := createRaw(t, f, `{"templateID":"code-interpreter-v1","secure":true,"network":{"allowPublicTraffic":false}}`)
	id := created["sandboxID"].(string)
	auth := map[string]string{
		"E2b-Sandbox-Id":           id,
		"E2b-Sandbox-Port":         "49999",
		"X-Access-Token":           created["envdAccessToken"].(string),
		"E2B-Traffic-Access-Token": created["trafficAccessToken"].(string),
	}
	with := func(k, v string) map[string]string {
		m := map[string]string{}
		for a, b := range auth {
			m[a] = b
		}
		if v == "" {
			delete(m, k)
		} else {
			m[k] = v
		}
		return m
	}
	f.OnExecute(func(_, lang, code string, w *StreamWriter) {
		w.Stdout("é\n")
		w.Result(lang)
	})

	tests := []struct {
		name   string
		hdr    map[string]string
		body   string
		status int
		want   string
	}{
		{"stream", auth, `{"code":"print(1)"}`, 200,
			`{"type": "number_of_executions", "execution_count": 1}` + "\n" +
				`{"type": "stdout", "text": "\u00e9\n", "timestamp": "`},
		{"code not a string", auth, `{"code":1}`, 422, `"detail"`},
		{"missing access token", with("X-Access-Token", ""), `{"code":"1"}`, 401, ""},
		{"wrong traffic token", with("E2B-Traffic-Access-Token", "nope"), `{"code":"1"}`, 403, ""},
		{"javascript", auth, `{"code":"1","language":"javascript"}`, 200, `"text": "javascript"`},
		{"unknown sandbox", with("E2b-Sandbox-Id", "sbx-none"), `{"code":"1"}`, 502, "not found"},
		{"another port", with("E2b-Sandbox-Port", "49983"), `{"code":"1"}`, 502, "not found"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, body := do(t, f, "POST", "/execute", tt.body, tt.hdr)
			if resp.StatusCode != tt.status || !strings.Contains(body, tt.want) {
				t.Fatalf("%d %q, want %d containing %q", resp.StatusCode, body, tt.status, tt.want)
			}
			if tt.status == 200 && !strings.HasSuffix(body, `{"type": "end_of_execution"}`+"\n") {
				t.Errorf("stream does not end with end_of_execution: %q", body)
			}
		})
	}
	if n := len(f.Executions()); n != len(tests)-4 { // auth and proxy failures never reach the interpreter
		t.Errorf("%d executions recorded, want %d", n, len(tests)-4)
	}
}

// A client that goes away mid-execution interrupts the kernel.
func TestClientGoingAwayInterruptsTheKernel(t *testing.T) {
	f := Start(t)
	id := createRaw(t, f, `{"templateID":"base"}`)["sandboxID"].(string)
	hung := make(chan struct{})
	f.OnExecute(func(_, _, _ string, w *StreamWriter) { w.Stdout("working"); w.Hang(); close(hung) })
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, "POST", f.URL+"/execute", strings.NewReader(`{"code":"1"}`))
	req.Header.Set("E2b-Sandbox-Id", id)
	req.Header.Set("E2b-Sandbox-Port", "49999")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	// Go away only once the code runs (it printed), as a client whose turn
	// ends mid-execution does; going earlier skips the code altogether.
	lines := bufio.NewScanner(resp.Body)
	for lines.Scan() && !strings.Contains(lines.Text(), "working") {
	}
	cancel()
	resp.Body.Close()
	<-hung // Hang returns once the handler has seen the client go
	if got := f.Interrupts(); len(got) != 1 || got[0] != id {
		t.Errorf("interrupts = %v", got)
	}
	if _, ok := f.Sandbox(id); !ok {
		t.Error("an interrupted kernel killed the sandbox")
	}
}

func TestPyJSON(t *testing.T) {
	got := pyJSON("type", "stdout", "text", "a😀é\n", "n", 3)
	want := `{"type": "stdout", "text": "a\ud83d\ude00\u00e9\n", "n": 3}`
	if got != want {
		t.Errorf("pyJSON = %s, want %s", got, want)
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(got), &m); err != nil || m["text"] != "a😀é\n" {
		t.Errorf("round trip: %v %v", m, err)
	}
}
