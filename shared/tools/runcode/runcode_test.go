package runcode_test

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/commonly/runtime/shared/runs"
	"github.com/commonly/runtime/shared/sandbox"
	"github.com/commonly/runtime/shared/sandbox/e2b"
	"github.com/commonly/runtime/shared/sandbox/e2b/e2btest"
	"github.com/commonly/runtime/shared/tools"
	"github.com/commonly/runtime/shared/tools/runcode"
)

var env = tools.Env{RunID: "run-42", UserID: "user-7", InstallID: "inst-3", PodID: "pod", AgentName: "agent"}

// ledger records what the tool wrote, and what the fake E2B had seen at
// that moment.
type ledger struct {
	mu         sync.Mutex
	created    []sandbox.Record
	killed     []string
	failCreate error
	fake       *e2btest.Fake
	execsAtRec int
}

func (l *ledger) SandboxCreated(_ context.Context, rec sandbox.Record) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.failCreate != nil {
		return l.failCreate
	}
	l.created = append(l.created, rec)
	if l.fake != nil {
		l.execsAtRec = len(l.fake.Executions())
	}
	return nil
}

func (l *ledger) SandboxKilled(_ context.Context, id string, _ time.Time) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.killed = append(l.killed, id)
	return nil
}

type harness struct {
	fake   *e2btest.Fake
	ledger *ledger
	tool   *runcode.Tool
}

func newHarness(t *testing.T, mod func(*runcode.Config)) *harness {
	t.Helper()
	f := e2btest.Start(t)
	c, err := e2b.New(f.ClientConfig())
	if err != nil {
		t.Fatal(err)
	}
	l := &ledger{fake: f}
	cfg := runcode.Config{Provider: c, Ledger: l}
	if mod != nil {
		mod(&cfg)
	}
	fac, err := runcode.NewFactory(cfg)
	if err != nil {
		t.Fatal(err)
	}
	tool := fac.New()
	t.Cleanup(func() { _ = tool.Close(context.Background()) })
	return &harness{fake: f, ledger: l, tool: tool}
}

func (h *harness) call(t *testing.T, lang, code string) tools.Result {
	t.Helper()
	args, err := json.Marshal(map[string]string{"language": lang, "code": code})
	if err != nil {
		t.Fatal(err)
	}
	return h.tool.Call(context.Background(), env, args)
}

func output(t *testing.T, r tools.Result) runcode.Output {
	t.Helper()
	if r.Err != nil || r.Fatal != nil {
		t.Fatalf("call failed: err %v, fatal %v", r.Err, r.Fatal)
	}
	out, ok := r.Output.(runcode.Output)
	if !ok {
		t.Fatalf("Output is %T", r.Output)
	}
	return out
}

// echo plays an execution that prints the code back.
func echo(_, _, code string, w *e2btest.StreamWriter) { w.Stdout(code) }

func TestNewFactoryRequiresProviderAndLedger(t *testing.T) {
	if _, err := runcode.NewFactory(runcode.Config{Ledger: &ledger{}}); err == nil {
		t.Error("no provider accepted")
	}
	c, _ := e2b.New(e2b.Config{APIKey: "k", Stage: "test"})
	if _, err := runcode.NewFactory(runcode.Config{Provider: c}); err == nil {
		t.Error("no ledger accepted")
	}
}

func TestSpec(t *testing.T) {
	h := newHarness(t, nil)
	spec := h.tool.Spec()
	if spec.Name != "commonly_run_code" {
		t.Errorf("Name = %q", spec.Name)
	}
	props := spec.Parameters["properties"].(map[string]any)
	if enum := props["language"].(map[string]any)["enum"]; !reflect.DeepEqual(enum, []string{"python", "javascript"}) {
		t.Errorf("language enum = %v", enum)
	}
	if ml := props["code"].(map[string]any)["maxLength"]; ml != 20000 {
		t.Errorf("code maxLength = %v", ml)
	}
	if !strings.Contains(spec.Description, "5 runs") {
		t.Errorf("description does not state the run limit: %q", spec.Description)
	}
}

func TestFirstRunCreatesAClosedRecordedSandbox(t *testing.T) {
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	h := newHarness(t, func(c *runcode.Config) { c.Now = func() time.Time { return t0 } })
	h.fake.OnExecute(echo)
	if n := len(h.fake.Creates()); n != 0 {
		t.Fatalf("%d sandboxes created before any run", n)
	}

	r := h.call(t, "python", "print(1)")
	if out := output(t, r); out.Stdout != "print(1)" || out.RunsLeft != 4 {
		t.Errorf("output = %+v", out)
	}

	creates := h.fake.Creates()
	if len(creates) != 1 {
		t.Fatalf("%d creates", len(creates))
	}
	body := creates[0].Body
	md, _ := body["metadata"].(map[string]any)
	if body["allow_internet_access"] != false || body["timeout"] != float64(180) || body["secure"] != true ||
		!reflect.DeepEqual(body["envVars"], map[string]any{}) ||
		!reflect.DeepEqual(body["network"], map[string]any{"allowPublicTraffic": false}) ||
		md["app"] != "commonly-turns" || md["runId"] != "run-42" || md["userId"] != "user-7" || md["installId"] != "inst-3" {
		t.Errorf("create body = %v", body)
	}
	if md["deadline"] != "2026-03-01T12:03:00Z" {
		t.Errorf("deadline = %v, want now + 180s", md["deadline"])
	}

	if len(h.ledger.created) != 1 {
		t.Fatalf("%d records", len(h.ledger.created))
	}
	rec := h.ledger.created[0]
	if rec.SandboxID != creates[0].SandboxID || rec.Provider != "e2b" || rec.Status != sandbox.StatusRunning ||
		rec.RunID != env.RunID || rec.UserID != env.UserID || rec.InstallID != env.InstallID ||
		!rec.CreatedAt.Equal(t0) || !rec.ExpiresAt.Equal(t0.Add(180*time.Second)) {
		t.Errorf("record = %+v", rec)
	}
	if h.ledger.execsAtRec != 0 {
		t.Errorf("record written after %d executions, want before the first", h.ledger.execsAtRec)
	}
	for _, e := range h.fake.Executions() {
		if _, ok := e.Body["env_vars"]; ok {
			t.Errorf("execute sent env_vars: %v", e.Body)
		}
	}

	cr := r.CodeRun
	if cr == nil || cr.Language != "python" || cr.CodeChars != 8 || cr.ExitKind != "ok" || cr.SandboxID != rec.SandboxID {
		t.Errorf("CodeRun = %+v", cr)
	}
}

func TestOneSandboxPerTurnKilledAtClose(t *testing.T) {
	h := newHarness(t, nil)
	h.fake.OnExecute(echo)
	var ids []string
	for i, lang := range []string{"python", "javascript", "python"} {
		r := h.call(t, lang, strings.Repeat("x", i+1))
		output(t, r)
		ids = append(ids, r.CodeRun.SandboxID)
	}
	if len(h.fake.Creates()) != 1 || ids[0] != ids[1] || ids[1] != ids[2] {
		t.Fatalf("creates %d, sandboxes %v: want one reused", len(h.fake.Creates()), ids)
	}
	if info, _ := h.fake.Sandbox(ids[0]); info.Executions != 3 {
		t.Errorf("%d executions in the sandbox", info.Executions)
	}

	if err := h.tool.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := h.tool.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if kills := h.fake.Kills(); !reflect.DeepEqual(kills, []string{ids[0]}) {
		t.Errorf("kills = %v, want exactly [%s]", kills, ids[0])
	}
	if !reflect.DeepEqual(h.ledger.killed, []string{ids[0]}) {
		t.Errorf("recorded kills = %v", h.ledger.killed)
	}
	if r := h.call(t, "python", "1"); r.Err == nil || r.Fatal != nil {
		t.Errorf("call after Close: %+v", r)
	}
	if n := len(h.fake.Creates()); n != 1 {
		t.Errorf("a call after Close created a sandbox (%d creates)", n)
	}
}

func TestCloseWithoutRunsDoesNothing(t *testing.T) {
	h := newHarness(t, nil)
	if err := h.tool.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if len(h.fake.Creates()) != 0 || len(h.fake.Kills()) != 0 || len(h.ledger.killed) != 0 {
		t.Error("Close without runs touched a sandbox")
	}
}

func TestRunLimit(t *testing.T) {
	h := newHarness(t, nil)
	h.fake.OnExecute(echo)
	for i := range 5 {
		if out := output(t, h.call(t, "python", "1")); out.RunsLeft != 4-i {
			t.Errorf("run %d: RunsLeft = %d", i+1, out.RunsLeft)
		}
	}
	r := h.call(t, "python", "1")
	if r.Err == nil || !strings.Contains(r.Err.Error(), "at most 5 code runs") || r.Fatal != nil {
		t.Fatalf("6th run: %+v", r)
	}
	if r.CodeRun == nil || r.CodeRun.ExitKind != "rejected" {
		t.Errorf("CodeRun = %+v", r.CodeRun)
	}
	if n := len(h.fake.Executions()); n != 5 {
		t.Errorf("%d executions reached the sandbox", n)
	}
}

func TestArgumentRejections(t *testing.T) {
	tests := []struct {
		name    string
		args    string
		wantErr string
		badArgs bool
	}{
		{"exactly the limit", `{"language":"python","code":"` + strings.Repeat("é", 20000) + `"}`, "", false},
		{"one character over", `{"language":"python","code":"` + strings.Repeat("x", 20001) + `"}`, "limit is 20000 characters", false},
		{"unknown language", `{"language":"ruby","code":"1"}`, `"python" or "javascript"`, true},
		{"js alias is not accepted", `{"language":"js","code":"1"}`, `"python" or "javascript"`, true},
		{"empty code", `{"language":"python","code":"  \n"}`, "code is empty", true},
		{"unknown field", `{"language":"python","code":"1","env":{"K":"V"}}`, "unknown field", true},
		{"code not a string", `{"language":"python","code":1}`, "cannot unmarshal", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, nil)
			h.fake.OnExecute(echo)
			r := h.tool.Call(context.Background(), env, json.RawMessage(tt.args))
			if tt.wantErr == "" {
				output(t, r)
				return
			}
			if r.Err == nil || !strings.Contains(r.Err.Error(), tt.wantErr) || r.Fatal != nil {
				t.Fatalf("result %+v, want error containing %q", r, tt.wantErr)
			}
			if errors.Is(r.Err, tools.ErrBadArguments) != tt.badArgs {
				t.Errorf("ErrBadArguments = %v, want %v", !tt.badArgs, tt.badArgs)
			}
			if len(h.fake.Creates()) != 0 {
				t.Error("a rejected call created a sandbox")
			}
			// Rejections do not use up runs.
			for range 5 {
				output(t, h.call(t, "python", "1"))
			}
		})
	}
}

func TestRunDeadline(t *testing.T) {
	h := newHarness(t, func(c *runcode.Config) { c.RunTimeout = 150 * time.Millisecond })
	hung := make(chan struct{})
	h.fake.OnExecute(func(_, _, code string, w *e2btest.StreamWriter) {
		if code == "loop" {
			w.Stdout("progress 1\n")
			w.Hang()
			close(hung)
			return
		}
		w.Stdout("fine")
	})
	start := time.Now()
	r := h.call(t, "python", "loop")
	if time.Since(start) > 3*time.Second {
		t.Errorf("run took %v with a 150ms deadline", time.Since(start))
	}
	if r.Fatal != nil || r.Err == nil || !strings.Contains(r.Err.Error(), "150ms limit per run") ||
		!strings.Contains(r.Err.Error(), "progress 1") {
		t.Fatalf("result %+v, want a timeout tool error with the partial output", r)
	}
	if r.CodeRun.ExitKind != "timeout" || r.Usage.SandboxMillis < 150 {
		t.Errorf("CodeRun %+v, SandboxMillis %d", r.CodeRun, r.Usage.SandboxMillis)
	}
	id := r.CodeRun.SandboxID
	<-hung // the fake has seen the client go
	if got := h.fake.Interrupts(); !reflect.DeepEqual(got, []string{id}) {
		t.Errorf("interrupts = %v, want the kernel of %s interrupted", got, id)
	}
	if out := output(t, h.call(t, "python", "next")); out.Stdout != "fine" {
		t.Errorf("the sandbox is not reusable after a timeout: %+v", out)
	}
}

func TestSandboxLostMidTurnEndsTheTurn(t *testing.T) {
	tests := []struct {
		name string
		lose func(f *e2btest.Fake, id string)
		play e2btest.ExecuteFunc
	}{
		{name: "gone between runs (502)", lose: func(f *e2btest.Fake, id string) { f.Vanish(id) }},
		{name: "dies mid-stream", play: func(_, _, _ string, w *e2btest.StreamWriter) { w.Stdout("half"); w.KillSandbox() }},
		{name: "stream ends early", play: func(_, _, _ string, w *e2btest.StreamWriter) { w.EndEarly() }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, nil)
			h.fake.OnExecute(echo)
			first := h.call(t, "python", "1")
			output(t, first)
			id := first.CodeRun.SandboxID
			if tt.lose != nil {
				tt.lose(h.fake, id)
			}
			if tt.play != nil {
				h.fake.OnExecute(tt.play)
			}
			r := h.call(t, "python", "2")
			if r.Fatal == nil || r.Fatal.Kind != runs.ErrSandbox || !r.Fatal.Infrastructure || r.Err != nil || r.Output != nil {
				t.Fatalf("result %+v, want Fatal sandbox_error only", r)
			}
			if !errors.Is(r.Fatal, sandbox.ErrLost) {
				t.Errorf("fatal %v does not wrap ErrLost", r.Fatal)
			}
			if r.CodeRun == nil || r.CodeRun.ExitKind != "sandbox_lost" || r.CodeRun.SandboxID != id {
				t.Errorf("CodeRun = %+v", r.CodeRun)
			}
			if again := h.call(t, "python", "3"); again.Fatal == nil || len(h.fake.Creates()) != 1 {
				t.Errorf("after a loss: %+v, %d creates; want the turn over, no new sandbox", again, len(h.fake.Creates()))
			}
			// Close still settles the record (kill of a gone sandbox is success).
			if err := h.tool.Close(context.Background()); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(h.ledger.killed, []string{id}) {
				t.Errorf("recorded kills = %v", h.ledger.killed)
			}
		})
	}
}

func TestCodeErrorsGoBackToTheModel(t *testing.T) {
	h := newHarness(t, nil)
	h.fake.OnExecute(func(_, _, _ string, w *e2btest.StreamWriter) {
		w.Error("NameError", "name 'x' is not defined", "\x1b[0;31mNameError\x1b[0m: name 'x' is not defined")
	})
	r := h.call(t, "python", "x")
	out := output(t, r)
	want := &runcode.Exception{Name: "NameError", Value: "name 'x' is not defined", Traceback: "NameError: name 'x' is not defined"}
	if !reflect.DeepEqual(out.Exception, want) {
		t.Errorf("exception = %+v, want %+v (ANSI stripped)", out.Exception, want)
	}
	if r.CodeRun.ExitKind != "error" {
		t.Errorf("ExitKind = %q", r.CodeRun.ExitKind)
	}
}

func TestOutputIsCappedForTheModel(t *testing.T) {
	h := newHarness(t, nil)
	h.fake.OnExecute(func(_, _, _ string, w *e2btest.StreamWriter) {
		w.Stdout("START" + strings.Repeat("o", 10000) + "END")
		w.Stderr(strings.Repeat("e", 10000))
		for range 3 {
			w.Result(strings.Repeat("r", 3000))
		}
		w.Error("E", strings.Repeat("v", 10000), strings.Repeat("t", 10000))
	})
	out := output(t, h.call(t, "python", "spam"))
	const limit = 4000 + 60 // the limit plus the note
	for name, s := range map[string]string{
		"stdout": out.Stdout, "stderr": out.Stderr, "value": out.Exception.Value, "traceback": out.Exception.Traceback,
	} {
		if n := len([]rune(s)); n > limit || !strings.Contains(s, "characters truncated]") {
			t.Errorf("%s: %d characters, note present: %v", name, n, strings.Contains(s, "truncated"))
		}
	}
	if !strings.HasPrefix(out.Stdout, "START") || !strings.HasSuffix(out.Stdout, "END") {
		t.Errorf("stdout lost its head or tail")
	}
	total := 0
	for _, r := range out.Results {
		total += len([]rune(r))
	}
	if total > limit+60 || len(out.Results) != 3 || !strings.Contains(out.Results[2], "more results truncated") {
		t.Errorf("results: %d entries, %d characters", len(out.Results), total)
	}
}

func TestUnavailableIsAToolError(t *testing.T) {
	h := newHarness(t, nil)
	h.fake.OnExecute(echo)
	h.fake.FailCreates(3, 503, "sandbox_capacity_unavailable") // the client's three attempts
	r := h.call(t, "python", "1")
	if r.Fatal != nil || r.Err == nil || !strings.Contains(r.Err.Error(), "code execution is unavailable") {
		t.Fatalf("result %+v, want the unavailability told to the model", r)
	}
	if len(h.ledger.created) != 0 {
		t.Error("recorded a sandbox that was never created")
	}
	// Capacity came back: the next run gets a sandbox.
	if out := output(t, h.call(t, "python", "again")); out.Stdout != "again" {
		t.Errorf("next run: %+v", out)
	}
}

func TestCreateFailureEndsTheTurn(t *testing.T) {
	h := newHarness(t, nil)
	h.fake.FailCreates(1, 500, "internal_server_error")
	r := h.call(t, "python", "1")
	if r.Fatal == nil || r.Fatal.Kind != runs.ErrSandbox || !r.Fatal.Infrastructure {
		t.Fatalf("result %+v, want Fatal sandbox_error", r)
	}
}

func TestRecordFailureKillsTheSandbox(t *testing.T) {
	h := newHarness(t, nil)
	h.fake.OnExecute(echo)
	h.ledger.failCreate = errors.New("dynamodb down")
	r := h.call(t, "python", "1")
	if r.Fatal != nil || r.Err == nil || strings.Contains(r.Err.Error(), "dynamodb") {
		t.Fatalf("result %+v, want a tool error without internals", r)
	}
	creates := h.fake.Creates()
	if len(creates) != 1 || !reflect.DeepEqual(h.fake.Kills(), []string{creates[0].SandboxID}) {
		t.Errorf("creates %d, kills %v: the unrecorded sandbox must be killed", len(creates), h.fake.Kills())
	}
	if len(h.fake.Executions()) != 0 {
		t.Error("code ran in an unrecorded sandbox")
	}
	if err := h.tool.Close(context.Background()); err != nil || len(h.ledger.killed) != 0 {
		t.Errorf("Close: %v, recorded kills %v", err, h.ledger.killed)
	}
}

func TestCancelledTurnIsNotASandboxFailure(t *testing.T) {
	h := newHarness(t, nil)
	ctx, cancel := context.WithCancel(context.Background())
	h.fake.OnExecute(func(_, _, _ string, w *e2btest.StreamWriter) { cancel(); w.Hang() })
	r := h.tool.Call(ctx, env, json.RawMessage(`{"language":"python","code":"1"}`))
	if r.Fatal == nil || r.Fatal.Kind != runs.ErrInterrupted || r.Fatal.Infrastructure {
		t.Fatalf("result %+v, want Fatal interrupted", r)
	}
}

// withClock runs the tool on a manual clock that the test and the fake's
// executions advance, instead of real time.
func withClock(clock *e2btest.Clock) func(*runcode.Config) {
	return func(c *runcode.Config) { c.Now = clock.Now }
}

func TestSandboxMillisIsTheRunsWallTime(t *testing.T) {
	clock := e2btest.NewClock(time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC))
	h := newHarness(t, withClock(clock))
	h.fake.OnExecute(func(_, _, _ string, w *e2btest.StreamWriter) { clock.Advance(60 * time.Millisecond); w.Stdout("ok") })
	r := h.call(t, "python", "1")
	output(t, r)
	if r.Usage.SandboxMillis < 60 || r.CodeRun.DurationMs != r.Usage.SandboxMillis {
		t.Errorf("SandboxMillis %d, DurationMs %d; want ≥ 60 and equal", r.Usage.SandboxMillis, r.CodeRun.DurationMs)
	}
}

func TestIdleMillisCoversTheSandboxLifeBeyondItsRuns(t *testing.T) {
	clock := e2btest.NewClock(time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC))
	h := newHarness(t, withClock(clock))
	h.fake.OnExecute(func(_, _, _ string, w *e2btest.StreamWriter) { clock.Advance(20 * time.Millisecond); w.Stdout("ok") })
	r := h.call(t, "python", "1")
	output(t, r)
	clock.Advance(50 * time.Millisecond) // the sandbox idles between runs and before the turn ends
	if got := h.tool.IdleMillis(); got != 0 {
		t.Fatalf("IdleMillis before Close = %d", got)
	}
	if err := h.tool.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := h.tool.IdleMillis(); got < 50 {
		t.Errorf("IdleMillis = %d, want ≥ 50 (the sandbox lived past its run)", got)
	}
}

func TestIdleMillisIsZeroWithoutASandbox(t *testing.T) {
	h := newHarness(t, nil)
	_ = h.tool.Close(context.Background())
	if got := h.tool.IdleMillis(); got != 0 {
		t.Errorf("IdleMillis = %d", got)
	}
}

// A code run reports its sandbox when created and what it prints as it
// prints it: the second line is printed only once the first reached the
// call's progress, so a buffered stream would never end.
func TestProgressStreamsTheSandboxAndTheOutputAsPrinted(t *testing.T) {
	h := newHarness(t, nil)
	first := make(chan struct{})
	h.fake.OnExecute(func(_, _, _ string, w *e2btest.StreamWriter) {
		w.Stdout("one\n")
		select {
		case <-first:
		case <-time.After(10 * time.Second):
			w.Stderr("the first line was not seen before the second was printed\n")
			return
		}
		w.Stderr("two\n")
	})
	var mu sync.Mutex
	var seen []string
	ctx := tools.WithProgress(context.Background(), tools.Progress{
		SandboxCreated: func(id string) { mu.Lock(); seen = append(seen, "created "+id); mu.Unlock() },
		Output: func(stream, text string) {
			mu.Lock()
			seen = append(seen, stream+" "+text)
			mu.Unlock()
			if text == "one\n" {
				close(first)
			}
		},
	})
	args, _ := json.Marshal(map[string]string{"language": "python", "code": "print(1)"})
	res := h.tool.Call(ctx, env, args)
	out := output(t, res)
	mu.Lock()
	defer mu.Unlock()
	want := []string{"created " + res.CodeRun.SandboxID, "stdout one\n", "stderr two\n"}
	if !slices.Equal(seen, want) || out.Stdout != "one\n" || out.Stderr != "two\n" {
		t.Fatalf("progress %q, output %+v", seen, out)
	}
}
