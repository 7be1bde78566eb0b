package agent

import (
	"context"
	"encoding/json"
	"reflect"
	"sync"
	"testing"

	"github.com/commonly/runtime/shared/runs"
	"github.com/commonly/runtime/shared/tools"
)

// recorder keeps the events a turn records, in order.
type recorder struct {
	mu sync.Mutex
	ds []runs.EventData
}

func (r *recorder) Record(d runs.EventData) { r.mu.Lock(); r.ds = append(r.ds, d); r.mu.Unlock() }

func (r *recorder) types() []runs.EventType {
	var ts []runs.EventType
	for _, d := range r.ds {
		ts = append(ts, d.EventType())
	}
	return ts
}

// A code turn's events say what its record says: the calls with their
// tokens and prices, the tool with its arguments and output, its sandbox
// created once; a refused call and a failed one end with their kinds.
func TestLoopRecordsTheTurnsEvents(t *testing.T) {
	h := newHarness(t,
		calls(call("c1", "run", `{"code":"print(1)"}`), call("c2", "nope", `{}`)).usage(100, 20, 10),
		calls(call("c3", "run", `{"code":"boom"}`)).usage(120, 0, 8),
		answer("1").usage(130, 0, 2))
	n := 0
	h.withTools(&fakeTool{name: "run", fn: func(ctx context.Context, args json.RawMessage) tools.Result {
		n++
		cr := &runs.CodeRun{Language: "python", ExitKind: "ok", SandboxID: "sb-1"}
		if n == 2 {
			cr.ExitKind = "error"
			return tools.Result{CodeRun: cr, Output: map[string]any{"error": "boom"}}
		}
		return tools.Result{CodeRun: cr, Output: map[string]any{"stdout": "1\n"}}
	}})
	rec := &recorder{}
	h.turn.Events = rec
	if out := h.run(context.Background()); out.Err != nil {
		t.Fatal(out.Err)
	}
	want := []runs.EventType{
		runs.EventModelStarted, runs.EventModelFinished,
		runs.EventToolStarted, runs.EventSandboxCreated, runs.EventToolFinished,
		runs.EventToolStarted, runs.EventToolFinished,
		runs.EventModelStarted, runs.EventModelFinished,
		runs.EventToolStarted, runs.EventToolFinished,
		runs.EventModelStarted, runs.EventModelFinished,
	}
	if got := rec.types(); !reflect.DeepEqual(got, want) {
		t.Fatalf("events %v\nwant %v", got, want)
	}
	r := h.r()
	mf := rec.ds[1].(runs.ModelFinished)
	s := r.Steps[0]
	if mf.PromptTokens != s.PromptTokens || mf.CachedPromptTokens != 20 || mf.CompletionTokens != 10 || mf.CostMicros != s.CostMicros || mf.CostMicros == 0 {
		t.Errorf("model.finished %+v, step %+v", mf, s)
	}
	var sum int64
	for _, d := range rec.ds {
		if m, ok := d.(runs.ModelFinished); ok {
			sum += int64(m.CostMicros)
		}
	}
	if sum != int64(r.Cost.ModelMicros) {
		t.Errorf("model.finished costs sum to %d, the run's model cost is %d", sum, r.Cost.ModelMicros)
	}
	if ts := rec.ds[2].(runs.ToolStarted); ts.Name != "run" || ts.Args != `{"code":"print(1)"}` || ts.CallID != "c1" {
		t.Errorf("tool.started %+v", ts)
	}
	if tf := rec.ds[4].(runs.ToolFinished); !tf.OK || tf.ErrorKind != "" || tf.Output != `{"ok":true,"stdout":"1\n"}` {
		t.Errorf("tool.finished %+v", tf)
	}
	if tf := rec.ds[6].(runs.ToolFinished); tf.OK || tf.ErrorKind != "not_available" {
		t.Errorf("refused call %+v", tf)
	}
	if tf := rec.ds[10].(runs.ToolFinished); tf.OK || tf.ErrorKind != "error" {
		t.Errorf("failed code run %+v", tf)
	}
}

// A tool's progress becomes the run's events while it runs: its sandbox
// when created (announced once, not again at tool.finished), then what
// its code prints, before tool.finished.
func TestToolProgressIsRecordedAsItHappens(t *testing.T) {
	h := newHarness(t, calls(call("c1", "run", `{"code":"print(1)"}`)).usage(100, 0, 10), answer("1").usage(110, 0, 2))
	h.withTools(&fakeTool{name: "run", fn: func(ctx context.Context, args json.RawMessage) tools.Result {
		p := tools.ProgressOf(ctx)
		p.SandboxCreated("sb-9")
		p.Output("stdout", "1\n")
		p.Output("stderr", "warn\n")
		return tools.Result{CodeRun: &runs.CodeRun{Language: "python", ExitKind: "ok", SandboxID: "sb-9"}, Output: map[string]any{"stdout": "1\n"}}
	}})
	rec := &recorder{}
	h.turn.Events = rec
	if out := h.run(context.Background()); out.Err != nil {
		t.Fatal(out.Err)
	}
	want := []runs.EventType{runs.EventModelStarted, runs.EventModelFinished,
		runs.EventToolStarted, runs.EventSandboxCreated, runs.EventToolOutput, runs.EventToolOutput, runs.EventToolFinished,
		runs.EventModelStarted, runs.EventModelFinished}
	if got := rec.types(); !reflect.DeepEqual(got, want) {
		t.Fatalf("events %v\nwant %v", got, want)
	}
	if o := rec.ds[5].(runs.ToolOutput); o != (runs.ToolOutput{Step: 0, CallID: "c1", Stream: "stderr", Text: "warn\n"}) {
		t.Errorf("tool.output %+v", o)
	}
	if s := rec.ds[3].(runs.SandboxCreated); s.SandboxID != "sb-9" {
		t.Errorf("sandbox.created %+v", s)
	}
}
