package app_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/commonly/runtime/functions/turn/app"
	"github.com/commonly/runtime/internal/dynamodblocal"
	"github.com/commonly/runtime/shared/engine/durableobject/dotest"
	"github.com/commonly/runtime/shared/llm/llmtest"
	"github.com/commonly/runtime/shared/runs"
	"github.com/commonly/runtime/shared/sandbox/e2b/e2btest"
	"github.com/commonly/runtime/shared/tracing"
)

// tracedStack is the turn function built as main builds it with tracing
// on (its DynamoDB client instrumented by tracing.InstrumentAWSOptions, its HTTP client with
// otelhttp), exporting to memory.
type tracedStack struct {
	*stack
	exp *tracetest.InMemoryExporter
	tp  *tracing.Provider
}

func newTracedStack(t *testing.T, cfg tracing.Config, extra map[string]string, steps ...llmtest.Step) *tracedStack {
	t.Helper()
	exp := tracetest.NewInMemoryExporter()
	cfg.Exporter, cfg.ServiceName = exp, "commonly-turn"
	tp, err := tracing.Setup(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	s := newStackDeps(t, extra, func(d *app.Deps, db *dynamodblocal.Server) {
		d.Tracing = tp
		d.Dynamo = db.Client(func(o *dynamodb.Options) {
			o.APIOptions = append(o.APIOptions, recorded.APIOption)
			tracing.InstrumentAWSOptions(&o.APIOptions)
		})
	}, steps...)
	return &tracedStack{stack: s, exp: exp, tp: tp}
}

// spans flushes and returns the exported spans of trace id, as a tree.
func (s *tracedStack) spans(t *testing.T, id string) *spanTree {
	t.Helper()
	if err := s.tp.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	tree := &spanTree{byID: map[trace.SpanID]tracetest.SpanStub{}}
	for _, sp := range s.exp.GetSpans() {
		if sp.SpanContext.TraceID().String() == id {
			tree.all = append(tree.all, sp)
			tree.byID[sp.SpanContext.SpanID()] = sp
		}
	}
	return tree
}

type spanTree struct {
	all  []tracetest.SpanStub
	byID map[trace.SpanID]tracetest.SpanStub
}

// named returns the spans called name, in start order.
func (tr *spanTree) named(name string) []tracetest.SpanStub {
	var out []tracetest.SpanStub
	for _, s := range tr.all {
		if s.Name == name {
			out = append(out, s)
		}
	}
	slices.SortFunc(out, func(a, b tracetest.SpanStub) int { return a.StartTime.Compare(b.StartTime) })
	return out
}

// one returns the one span called name under parent (any depth).
func (tr *spanTree) one(t *testing.T, name string, under *tracetest.SpanStub) tracetest.SpanStub {
	t.Helper()
	var got []tracetest.SpanStub
	for _, s := range tr.named(name) {
		if under == nil || tr.under(s, *under) {
			got = append(got, s)
		}
	}
	if len(got) != 1 {
		t.Fatalf("%d spans %q, want 1; the trace holds %v", len(got), name, tr.names())
	}
	return got[0]
}

// under says whether s descends from anc.
func (tr *spanTree) under(s, anc tracetest.SpanStub) bool {
	for p := s.Parent; p.IsValid(); {
		if p.SpanID() == anc.SpanContext.SpanID() {
			return true
		}
		next, ok := tr.byID[p.SpanID()]
		if !ok {
			return false
		}
		p = next.Parent
	}
	return false
}

// children are the names of the spans whose parent is s.
func (tr *spanTree) children(s tracetest.SpanStub) []string {
	var out []string
	for _, c := range tr.all {
		if c.Parent.SpanID() == s.SpanContext.SpanID() {
			out = append(out, c.Name)
		}
	}
	return out
}

func (tr *spanTree) names() []string {
	var out []string
	for _, s := range tr.all {
		out = append(out, s.Name)
	}
	slices.Sort(out)
	return out
}

func attr(s tracetest.SpanStub, key attribute.Key) attribute.Value {
	for _, kv := range s.Attributes {
		if kv.Key == key {
			return kv.Value
		}
	}
	return attribute.Value{}
}

func wantAttrs(t *testing.T, s tracetest.SpanStub, want map[attribute.Key]any) {
	t.Helper()
	for k, v := range want {
		if got := attr(s, k).AsInterface(); got != v {
			t.Errorf("span %q: %s = %v (%T), want %v (%T)", s.Name, k, got, got, v, v)
		}
	}
}

// The code turn's trace: the API request at the root, admission with its
// transaction, the dispatch, the worker's run with its claim, each model
// call (GenAI attributes, tokens and cost from the step it recorded) with
// the HTTP call to LiteLLM under it, the tool call with the sandbox's
// create, run and kill, the checkpoint and the final write.
func TestTraceOfACodeTurn(t *testing.T) {
	fake := e2btest.Start(t)
	fake.OnExecute(func(_, lang, code string, w *e2btest.StreamWriter) { w.Stdout("42\n") })
	s := newTracedStack(t, tracing.Config{SampleRatio: 1}, e2bEnv(fake),
		llmtest.Calls(llmtest.Call("commonly_run_code", `{"language":"python","code":"print(6*7)"}`)),
		llmtest.Text("It is 42."),
	)
	s.install(t, `{"userId":"user-1","podId":"pod-1","agentName":"calc","tools":["commonly_run_code"]}`)
	run := s.turn(t, pythonBlock)
	if run.Status != runs.StatusSucceeded || run.TraceID == "" {
		t.Fatalf("run = %s %s, traceId %q", run.Status, run.ErrorKind, run.TraceID)
	}
	tr := s.spans(t, run.TraceID)

	root := tr.one(t, "POST /v1/installs/{installId}/turns", nil)
	if root.Parent.IsValid() || root.SpanKind != trace.SpanKindServer {
		t.Errorf("root: parent %v kind %v", root.Parent, root.SpanKind)
	}
	wantAttrs(t, root, map[attribute.Key]any{
		tracing.RunID: run.RunID, tracing.InstallID: "inst-1", tracing.Engine: "native", tracing.RunStatus: "succeeded",
		tracing.TotalTokens: run.Tokens.Total, tracing.CostMicros: int64(run.CostMicros), "http.response.status_code": int64(200),
	})
	admit := tr.one(t, "turn.admit", &root)
	admitTx := tr.one(t, "DynamoDB.TransactWriteItems", &admit)
	wantAttrs(t, admitTx, map[attribute.Key]any{
		"rpc.system.name": "aws-api", "rpc.method": "DynamoDB/TransactWriteItems", "db.system.name": "aws.dynamodb",
		"http.response.status_code": int64(200),
	})
	if tables := attr(admitTx, "aws.dynamodb.table_names").AsStringSlice(); len(tables) != 2 {
		t.Errorf("the admission's tables: %v, want the runs and the state table", tables)
	}
	if admitTx.SpanKind != trace.SpanKindClient {
		t.Errorf("the admission's DynamoDB span: kind %v", admitTx.SpanKind)
	}
	dispatch := tr.one(t, "turn.dispatch", &root)
	worker := tr.one(t, "turn.run", &dispatch)
	wantAttrs(t, worker, map[attribute.Key]any{tracing.RunStatus: "succeeded", tracing.CostMicros: int64(run.CostMicros)})
	tr.one(t, "turn.claim", &worker)
	// One before the second model call, a transaction with the journal's
	// entries; the final answer's entry rides on the final write.
	tr.one(t, "turn.checkpoint", &worker)
	final := tr.one(t, "turn.final_write", &worker)
	finalPut := tr.one(t, "DynamoDB.PutItem", &final)
	if tables := attr(finalPut, "aws.dynamodb.table_names").AsStringSlice(); len(tables) != 1 || tables[0] != "runs" {
		t.Errorf("the final write's tables: %v, want [runs]", tables)
	}

	chats := tr.named("chat deepseek-v4-flash")
	if len(chats) != 2 {
		t.Fatalf("%d model call spans, want 2: %v", len(chats), tr.names())
	}
	for i, c := range chats {
		st := run.Steps[i]
		if c.SpanKind != trace.SpanKindClient || !tr.under(c, worker) {
			t.Errorf("model call %d: kind %v, under the run %v", i, c.SpanKind, tr.under(c, worker))
		}
		wantAttrs(t, c, map[attribute.Key]any{
			"gen_ai.operation.name": "chat", "gen_ai.provider.name": "deepseek", "gen_ai.request.model": "deepseek-v4-flash",
			"gen_ai.response.model": st.Model, "gen_ai.usage.input_tokens": st.PromptTokens,
			"gen_ai.usage.cache_read.input_tokens": st.CachedPromptTokens, "gen_ai.usage.output_tokens": st.CompletionTokens,
			"gen_ai.response.id": st.CallID, tracing.CostMicros: int64(st.CostMicros),
		})
		if fr := attr(c, "gen_ai.response.finish_reasons").AsStringSlice(); len(fr) != 1 || fr[0] != st.FinishReason {
			t.Errorf("model call %d finish reasons = %v, want [%s]", i, fr, st.FinishReason)
		}
		// The chat span is the call's client span: no otelhttp span under
		// it, the HTTP facts on it.
		if kids := tr.children(c); len(kids) != 0 {
			t.Errorf("model call %d has child spans %v", i, kids)
		}
		wantAttrs(t, c, map[attribute.Key]any{"server.address": "127.0.0.1", "http.response.status_code": int64(200)})
		if attr(c, "server.port").AsInt64() == 0 {
			t.Errorf("model call %d: no server.port", i)
		}
	}
	// LiteLLM got the trace context: its own spans would join the turn's.
	if tp := s.llm.Requests()[0].Header.Get("traceparent"); !strings.Contains(tp, run.TraceID) {
		t.Errorf("traceparent to LiteLLM = %q", tp)
	}
	tool := tr.one(t, "execute_tool commonly_run_code", &worker)
	wantAttrs(t, tool, map[attribute.Key]any{"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "commonly_run_code"})
	tr.one(t, "sandbox.create", &tool)
	exec := tr.one(t, "sandbox.run", &tool)
	wantAttrs(t, exec, map[attribute.Key]any{tracing.SandboxID: run.Steps[0].ToolCalls[0].CodeRun.SandboxID, "commonly.code.language": "python"})
	tr.one(t, "sandbox.kill", &worker)
	for _, sp := range tr.all {
		if sp.Status.Code == codes.Error {
			t.Errorf("span %q failed in a turn that succeeded", sp.Name)
		}
	}
	s.assertNoSecretsInSpans(t, []string{pythonBlock, "print(6*7)", "It is 42.", "42\n"})

	// Every log line logged with the turn's context names its trace.
	var withTrace int
	for _, line := range strings.Split(strings.TrimSpace(s.logs.String()), "\n") {
		if strings.Contains(line, run.RunID) && strings.Contains(line, `"traceId":"`+run.TraceID+`"`) {
			withTrace++
		}
	}
	if withTrace == 0 {
		t.Errorf("no log line of the run carries its traceId:\n%s", s.logs.String())
	}
}

// A failed turn is kept whatever the share of successful turns: with a
// share of 0 the successful turn's trace is dropped, the failed one's
// exported whole, its model call and root failed with the run's kind.
func TestTraceOfATurnWhoseModelFails(t *testing.T) {
	s := newTracedStack(t, tracing.Config{SampleRatio: 0}, nil,
		llmtest.Text("fine"),
		llmtest.ServerError(http.StatusBadGateway),
	)
	s.install(t, `{"userId":"user-1","podId":"pod-1","agentName":"scout"}`)
	ok := s.turn(t, "hello")
	failed := s.turn(t, "hello again")
	if ok.Status != runs.StatusSucceeded || failed.Status != runs.StatusFailed || failed.ErrorKind == "" {
		t.Fatalf("runs: %s, %s %s", ok.Status, failed.Status, failed.ErrorKind)
	}
	if n := len(s.spans(t, ok.TraceID).all); n != 0 {
		t.Errorf("the successful turn's trace was exported (%d spans) at a share of 0", n)
	}
	tr := s.spans(t, failed.TraceID)
	root := tr.one(t, "POST /v1/installs/{installId}/turns", nil)
	if root.Status.Code != codes.Error {
		t.Errorf("root status = %v", root.Status)
	}
	wantAttrs(t, root, map[attribute.Key]any{tracing.RunStatus: "failed", tracing.ErrorKind: string(failed.ErrorKind), tracing.ErrorType: string(failed.ErrorKind)})
	chat := tr.one(t, "chat deepseek-v4-flash", &root)
	if chat.Status.Code != codes.Error || attr(chat, tracing.ErrorType).AsString() != string(failed.ErrorKind) {
		t.Errorf("model call: status %v, error.type %q", chat.Status, attr(chat, tracing.ErrorType).AsString())
	}
	wantAttrs(t, chat, map[attribute.Key]any{"http.response.status_code": int64(http.StatusBadGateway)})
	if kids := tr.children(chat); len(kids) != 0 {
		t.Errorf("the failed model call has child spans %v", kids)
	}
	tr.one(t, "turn.final_write", &root)
	s.assertNoSecretsInSpans(t, []string{"hello again"})
}

// A Durable Object turn: the forward to the older runtime is the HTTP
// call under the run, which is priced from what the runtime reports.
func TestTraceOfADurableObjectTurn(t *testing.T) {
	const doToken = "do-runtime-token-7a6b5c"
	var gotTraceparent string
	rt := dotest.New(doToken)
	do := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		gotTraceparent = r.Header.Get("traceparent")
		rt.ServeHTTP(w, r)
	}))
	t.Cleanup(do.Close)
	s := newTracedStack(t, tracing.Config{SampleRatio: 1}, map[string]string{"DO_RUNTIME_URL": do.URL, "DO_RUNTIME_TOKEN": doToken})
	s.install(t, `{"userId":"user-1","podId":"pod-1","agentName":"scout","engine":"durable-object"}`)
	run := s.turn(t, "through the durable object")
	if run.Status != runs.StatusSucceeded || run.Engine != "durable-object" {
		t.Fatalf("run = %s %s engine %s", run.Status, run.ErrorKind, run.Engine)
	}
	tr := s.spans(t, run.TraceID)
	root := tr.one(t, "POST /v1/installs/{installId}/turns", nil)
	wantAttrs(t, root, map[attribute.Key]any{tracing.Engine: "durable-object", tracing.RunStatus: "succeeded",
		"gen_ai.usage.input_tokens": int64(1200), "gen_ai.usage.output_tokens": int64(80), tracing.CostMicros: int64(run.CostMicros)})
	if run.CostMicros <= 0 {
		t.Errorf("the forwarded turn is not priced: %d", run.CostMicros)
	}
	worker := tr.one(t, "turn.run", &root)
	tr.one(t, "HTTP POST", &worker)
	if len(tr.named("chat deepseek-v4-flash")) != 0 {
		t.Errorf("a model call span in a forwarded turn: %v", tr.names())
	}
	if !strings.Contains(gotTraceparent, run.TraceID) {
		t.Errorf("traceparent to the runtime = %q", gotTraceparent)
	}
	s.assertNoSecretsInSpans(t, []string{"through the durable object", "answer from the durable object"})
}

// With content capture on, the model call holds the messages, scrubbed
// of every configured credential as logs are.
func TestCapturedContentIsScrubbed(t *testing.T) {
	s := newTracedStack(t, tracing.Config{SampleRatio: 1, CaptureContent: true}, nil, llmtest.Text("noted"))
	s.install(t, `{"userId":"user-1","podId":"pod-1","agentName":"scout"}`)
	run := s.turn(t, "remember the key "+llmKey+" for me")
	tr := s.spans(t, run.TraceID)
	chat := tr.one(t, "chat deepseek-v4-flash", nil)
	in := attr(chat, tracing.InputMessages).AsString()
	if !strings.Contains(in, "remember the key") || !strings.Contains(attr(chat, tracing.OutputMessages).AsString(), "noted") {
		t.Errorf("captured content: in %q, out %q", in, attr(chat, tracing.OutputMessages).AsString())
	}
	s.assertNoSecretsInSpans(t, nil)
}

// assertNoSecretsInSpans checks every exported span (names, attributes,
// events, links, status) for the configured credentials, the broker's
// tokens and, unless content is captured, the given message texts.
func (s *tracedStack) assertNoSecretsInSpans(t *testing.T, content []string) {
	t.Helper()
	if err := s.tp.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	spans := s.exp.GetSpans()
	if len(spans) == 0 {
		t.Fatal("no spans exported")
	}
	b, err := json.Marshal(spans)
	if err != nil {
		t.Fatal(err)
	}
	all := string(b)
	for _, secret := range append(configuredSecrets(s.cfg), s.broker.Secrets()...) {
		if strings.Contains(all, secret) {
			t.Errorf("a credential is in a span: %.6s…", secret)
		}
	}
	for _, c := range content {
		if strings.Contains(all, c) || strings.Contains(all, strings.TrimSpace(mustJSONString(c))) {
			t.Errorf("message content is in a span with capture off: %q", c)
		}
	}
}

func mustJSONString(s string) string {
	b, _ := json.Marshal(s)
	return strings.Trim(string(b), `"`)
}
