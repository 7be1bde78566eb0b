package agent

import (
	"context"

	"github.com/commonly/runtime/shared/llm"
	"github.com/commonly/runtime/shared/tracing"
)

// tracedModelCall is callModel under its GenAI span ("chat {model}"),
// which gets what the call recorded as a step: tokens, finish reason,
// cost. Content (the messages sent, the answer) only when an operator
// turned capture on.
func (tr *turn) tracedModelCall(ctx context.Context) (*llm.Response, *Error) {
	index := len(tr.run.Steps)
	ctx, span := tracing.StartChat(ctx, tr.model, index)
	tracing.RecordContent(ctx, tracing.InputMessages, tr.messages)
	resp, e := tr.callModel(ctx)
	if resp != nil {
		tracing.RecordContent(ctx, tracing.OutputMessages, []llm.Message{resp.Message})
	}
	var kind string
	if e != nil {
		kind = string(e.Kind)
	}
	if len(tr.run.Steps) > index {
		tracing.EndChat(span, &tr.run.Steps[index], kind)
	} else {
		tracing.EndChat(span, nil, kind)
	}
	return resp, e
}

// tracedToolCall is dispatch under its span ("execute_tool {name}"),
// which gets the call's outcome from its record. Arguments and result
// only when content capture is on.
func (tr *turn) tracedToolCall(ctx context.Context, step int, call llm.ToolCall) *Error {
	ctx, span := tracing.StartTool(ctx, tracing.ToolName(call.Name, maxLoggedName), call.ID)
	tracing.RecordContent(ctx, tracing.ToolArguments, call.Arguments)
	s := &tr.run.Steps[step]
	before, replies := len(s.ToolCalls), len(tr.messages)
	e := tr.dispatch(ctx, step, call)
	if len(tr.messages) > replies {
		tracing.RecordContent(ctx, tracing.ToolResult, tr.messages[len(tr.messages)-1].Content)
	}
	var kind string
	if e != nil {
		kind = string(e.Kind)
	}
	s = &tr.run.Steps[step]
	if len(s.ToolCalls) > before {
		tracing.EndTool(span, &s.ToolCalls[len(s.ToolCalls)-1], kind)
	} else {
		tracing.EndTool(span, nil, kind)
	}
	return e
}
