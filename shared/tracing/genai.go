package tracing

import (
	"context"
	"strings"

	"go.opentelemetry.io/otel/attribute"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/commonly/runtime/shared/runs"
	"github.com/commonly/runtime/shared/textcap"
)

// StartChat starts the span of one model call, named and kinded as the
// GenAI conventions say ("chat {model}", CLIENT).
func StartChat(ctx context.Context, model string, step int) (context.Context, trace.Span) {
	return Tracer().Start(ctx, "chat "+model, trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(
		semconv.GenAIOperationNameChat,
		semconv.GenAIProviderNameKey.String(ProviderOf(model)),
		semconv.GenAIRequestModel(model),
		Step.Int(step),
	))
}

// EndChat records a model call's outcome from the step it recorded (nil
// when the call failed before anything could be billed) and ends the
// span: response model and id, tokens (input including cached, as the
// conventions say), finish reason and cost. errKind is the run's error
// kind when the call ended the turn.
func EndChat(span trace.Span, step *runs.Step, errKind string) {
	defer span.End()
	if !span.IsRecording() {
		return
	}
	if step != nil {
		// One SetAttributes: each call locks the span and may grow its
		// attributes.
		attrs := make([]attribute.KeyValue, 0, 8)
		attrs = append(attrs,
			semconv.GenAIResponseModel(step.Model),
			semconv.GenAIUsageInputTokens(int(step.PromptTokens)),
			semconv.GenAIUsageCacheReadInputTokens(int(step.CachedPromptTokens)),
			semconv.GenAIUsageOutputTokens(int(step.CompletionTokens)),
			CostMicros.Int64(int64(step.CostMicros)),
		)
		if step.CallID != "" {
			attrs = append(attrs, semconv.GenAIResponseID(step.CallID))
		}
		if step.FinishReason != "" {
			attrs = append(attrs, semconv.GenAIResponseFinishReasons(step.FinishReason))
		}
		if step.Estimated {
			attrs = append(attrs, Estimated.Bool(true))
		}
		span.SetAttributes(attrs...)
	}
	if errKind != "" {
		Fail(span, errKind)
	}
}

// StartTool starts the span of one tool call ("execute_tool {name}",
// INTERNAL).
func StartTool(ctx context.Context, name, callID string) (context.Context, trace.Span) {
	attrs := []attribute.KeyValue{semconv.GenAIOperationNameExecuteTool, semconv.GenAIToolName(name)}
	if callID != "" {
		attrs = append(attrs, semconv.GenAIToolCallID(callID))
	}
	return Tracer().Start(ctx, "execute_tool "+name, trace.WithAttributes(attrs...))
}

// EndTool records a tool call's outcome from its record and ends the
// span. A call that did not run or failed is marked failed with
// "tool_error", or errKind when it ended the turn; its message stays on
// the run, not in the span (it can quote the model's arguments).
func EndTool(span trace.Span, rec *runs.ToolCall, errKind string) {
	defer span.End()
	if !span.IsRecording() || rec == nil {
		return
	}
	if rec.CodeRun != nil {
		span.SetAttributes(attribute.String("commonly.code.language", rec.CodeRun.Language),
			attribute.String("commonly.code.exit_kind", rec.CodeRun.ExitKind),
			attribute.Int("commonly.code.chars", rec.CodeRun.CodeChars))
	}
	switch {
	case errKind != "":
		Fail(span, errKind)
	case !rec.OK:
		Fail(span, "tool_error")
	}
}

// ProviderOf is gen_ai.provider.name for a model name as the proxy
// (LiteLLM) knows it: the conventions' well-known value for the family
// the name belongs to, else "openai", the wire the proxy speaks. The
// conventions allow this best guess behind an OpenAI-compatible proxy.
func ProviderOf(model string) string {
	m := strings.ToLower(model)
	if i := strings.LastIndexByte(m, '/'); i >= 0 {
		m = m[i+1:]
	}
	switch {
	case strings.HasPrefix(m, "deepseek"):
		return semconv.GenAIProviderNameDeepseek.Value.AsString()
	case strings.HasPrefix(m, "claude"):
		return semconv.GenAIProviderNameAnthropic.Value.AsString()
	case strings.HasPrefix(m, "gemini"):
		return semconv.GenAIProviderNameGCPGemini.Value.AsString()
	case strings.HasPrefix(m, "mistral"):
		return semconv.GenAIProviderNameMistralAI.Value.AsString()
	}
	return semconv.GenAIProviderNameOpenAI.Value.AsString()
}

// ToolName is a tool name as a span holds it: the model's text, bounded
// to max bytes (an unknown name can be anything).
func ToolName(name string, max int) string { return textcap.Bytes(name, max) }
