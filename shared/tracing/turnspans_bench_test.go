package tracing_test

import (
	"context"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/commonly/runtime/shared/runs"
	"github.com/commonly/runtime/shared/tracing"
)

// BenchmarkTurnSpans records a scripted turn's spans (the request, the
// admission, the dispatch, the run, the claim, 3 model calls, 2 tool
// calls, 2 checkpoints, the final write and 5 DynamoDB calls, with the
// attributes the runtime gives them) through the provider as a function
// sets it up: "drop" decides not to keep the trace (what a successful
// turn outside the share costs), "keep" hands it to an exporter that
// does nothing (the encoding and the request are BenchmarkOTLPExport's).
func BenchmarkTurnSpans(b *testing.B) {
	for _, c := range []struct {
		name  string
		ratio float64
	}{{"drop", 0}, {"keep", 1}} {
		b.Run(c.name, func(b *testing.B) {
			tp, err := tracing.Setup(context.Background(), tracing.Config{Exporter: tracetest.NewNoopExporter(), SampleRatio: c.ratio})
			if err != nil {
				b.Fatal(err)
			}
			tp.ScrubSecrets("sk-litellm-bench-key-123456")
			b.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
			b.ReportAllocs()
			for b.Loop() {
				recordTurn()
				if err := tp.Flush(context.Background()); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

var benchRun = &runs.Run{RunID: "run_8515469973d454f6790a04a8", InstallID: "inst-1", UserID: "user-1", Engine: "native", Status: runs.StatusSucceeded}

// awsCall is a DynamoDB call's client span as addAWSSpans records it.
func awsCall(ctx context.Context) {
	_, s := tracing.Start(ctx, "DynamoDB.UpdateItem", trace.WithSpanKind(trace.SpanKindClient))
	s.SetAttributes(attribute.String("rpc.system.name", "aws-api"), attribute.String("rpc.method", "DynamoDB/UpdateItem"),
		attribute.String("aws.region", "us-east-1"), attribute.String("db.system.name", "aws.dynamodb"),
		attribute.StringSlice("aws.dynamodb.table_names", []string{"runs"}), attribute.Int("http.response.status_code", 200),
		attribute.String("aws.request_id", "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789ABCDEFGHIJKLMNOP"))
	s.End()
}

func recordTurn() {
	ctx, root := tracing.Start(context.Background(), "POST", trace.WithSpanKind(trace.SpanKindServer),
		trace.WithAttributes(attribute.String("http.request.method", "POST"), attribute.String("aws.request_id", "req-123456789")))
	actx, admit := tracing.Start(ctx, "turn.admit")
	awsCall(actx)
	admit.SetAttributes(tracing.RunStarted(benchRun)...)
	admit.End()
	dctx, dispatch := tracing.Start(ctx, "turn.dispatch", trace.WithAttributes(tracing.RunID.String(benchRun.RunID)))
	wctx, worker := tracing.Start(dctx, "turn.run")
	cctx, claim := tracing.Start(wctx, "turn.claim")
	awsCall(cctx)
	claim.SetAttributes(tracing.RunID.String(benchRun.RunID), attribute.Bool("commonly.claim.claimed", true))
	claim.End()
	for i := range 3 {
		_, chat := tracing.StartChat(wctx, "deepseek-v4-flash", i)
		chat.SetAttributes(attribute.String("server.address", "litellm.internal"), attribute.Int("server.port", 443), attribute.Int("http.response.status_code", 200))
		tracing.EndChat(chat, &runs.Step{Model: "deepseek-v4-flash", PromptTokens: 1200, CompletionTokens: 80, CostMicros: 300, CallID: "chatcmpl-123456789", FinishReason: "stop"}, "")
		if i == 2 {
			break
		}
		_, tool := tracing.StartTool(wctx, "bench_noop", "call_123")
		tracing.EndTool(tool, &runs.ToolCall{OK: true}, "")
		kctx, checkpoint := tracing.Start(wctx, "turn.checkpoint", trace.WithAttributes(tracing.RunID.String(benchRun.RunID), tracing.Step.Int(i)))
		awsCall(kctx)
		checkpoint.End()
	}
	fctx, final := tracing.Start(wctx, "turn.final_write", trace.WithAttributes(tracing.RunID.String(benchRun.RunID),
		tracing.RunStatus.String("succeeded"), tracing.Refunded.Bool(false)))
	awsCall(fctx)
	final.End()
	tracing.RunEnded(worker, benchRun)
	worker.End()
	dispatch.End()
	tracing.RunEnded(root, benchRun)
	root.End()
}
