package tracing

import (
	"context"
	"encoding/json"
	"sync/atomic"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/commonly/runtime/shared/textcap"
)

// MaxContentBytes bounds one captured content attribute (a span holds at
// most a few of them; X-Ray takes 200 KB a span).
const MaxContentBytes = 16 << 10

// captured is the scrubber of the provider that captures content; nil
// (the default) captures none.
var captured atomic.Pointer[scrubber]

// RecordContent sets key to v (a string, or anything encoded as JSON) on
// the span in ctx, bounded to MaxContentBytes, when content capture is
// on; otherwise it does nothing and v is not encoded.
func RecordContent(ctx context.Context, key attribute.Key, v any) {
	if captured.Load() == nil {
		return
	}
	span := trace.SpanFromContext(ctx)
	if !span.IsRecording() {
		return
	}
	s, ok := v.(string)
	if !ok {
		b, err := json.Marshal(v)
		if err != nil {
			return
		}
		s = string(b)
	}
	// Scrubbed when the span is exported, as every attribute is.
	span.SetAttributes(key.String(textcap.Bytes(s, MaxContentBytes)))
}

// The GenAI conventions' opt-in content attributes.
const (
	InputMessages  = attribute.Key("gen_ai.input.messages")
	OutputMessages = attribute.Key("gen_ai.output.messages")
	ToolArguments  = attribute.Key("gen_ai.tool.call.arguments")
	ToolResult     = attribute.Key("gen_ai.tool.call.result")
)
