package llm

import (
	"errors"
	"fmt"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/packages/param"
	"github.com/openai/openai-go/v3/shared"
)

// reasoningField is DeepSeek's thinking text, a sibling of content.
const reasoningField = "reasoning_content"

// chatParams maps a Request to the SDK's request body.
func chatParams(req Request) (openai.ChatCompletionNewParams, error) {
	if req.Model == "" {
		return openai.ChatCompletionNewParams{}, errors.New("request has no model")
	}
	if len(req.Messages) == 0 {
		return openai.ChatCompletionNewParams{}, errors.New("request has no messages")
	}
	p := openai.ChatCompletionNewParams{Model: req.Model}
	for i, m := range req.Messages {
		mp, err := messageParam(m)
		if err != nil {
			return openai.ChatCompletionNewParams{}, fmt.Errorf("message %d: %w", i, err)
		}
		p.Messages = append(p.Messages, mp)
	}
	if len(req.Tools) > 0 {
		for _, t := range req.Tools {
			p.Tools = append(p.Tools, toolParam(t))
		}
		// Explicit, so a proxy default of "none" cannot silently disable
		// tools. parallel_tool_calls is left unset: DeepSeek may ignore it
		// and the loop handles several calls in one message anyway.
		p.ToolChoice = openai.ChatCompletionToolChoiceOptionUnionParam{
			OfAuto: openai.String(string(openai.ChatCompletionToolChoiceOptionAutoAuto)),
		}
	}
	if req.User != "" {
		p.User = openai.String(req.User)
	}
	if req.MaxTokens > 0 {
		// max_tokens, not max_completion_tokens: DeepSeek reads this one.
		p.MaxTokens = openai.Int(req.MaxTokens)
	}
	return p, nil
}

func messageParam(m Message) (openai.ChatCompletionMessageParamUnion, error) {
	switch m.Role {
	case RoleSystem:
		return openai.SystemMessage(m.Content), nil
	case RoleUser:
		return openai.UserMessage(m.Content), nil
	case RoleAssistant:
		return assistantParam(m)
	case RoleTool:
		if m.ToolCallID == "" {
			return openai.ChatCompletionMessageParamUnion{}, errors.New("tool message without tool_call_id")
		}
		return openai.ToolMessage(m.Content, m.ToolCallID), nil
	default:
		return openai.ChatCompletionMessageParamUnion{}, fmt.Errorf("unknown role %q", m.Role)
	}
}

// assistantParam echoes an assistant message back as the model produced
// it: ids and argument strings unchanged.
func assistantParam(m Message) (openai.ChatCompletionMessageParamUnion, error) {
	var a openai.ChatCompletionAssistantMessageParam
	switch {
	case m.Content != "":
		a.Content.OfString = openai.String(m.Content)
	case len(m.ToolCalls) > 0:
		a.Content.OfString = param.Null[string]()
	default:
		a.Content.OfString = openai.String("")
	}
	for _, tc := range m.ToolCalls {
		if tc.ID == "" || tc.Name == "" {
			return openai.ChatCompletionMessageParamUnion{}, errors.New("assistant tool call without id or name")
		}
		a.ToolCalls = append(a.ToolCalls, openai.ChatCompletionMessageToolCallUnionParam{
			OfFunction: &openai.ChatCompletionMessageFunctionToolCallParam{
				ID: tc.ID,
				Function: openai.ChatCompletionMessageFunctionToolCallFunctionParam{
					Name:      tc.Name,
					Arguments: tc.Arguments,
				},
			},
		})
	}
	if len(m.ToolCalls) > 0 {
		// DeepSeek's thinking mode answers 400 unless the reasoning of a
		// tool-calling turn comes back, even when it was "". Message cannot
		// tell "" from absent, so it is always sent on these messages; for
		// turns without tool calls it is ignored upstream, so it is not sent.
		a.SetExtraFields(map[string]any{reasoningField: m.ReasoningContent})
	}
	return openai.ChatCompletionMessageParamUnion{OfAssistant: &a}, nil
}

func toolParam(t ToolSpec) openai.ChatCompletionToolUnionParam {
	fn := shared.FunctionDefinitionParam{Name: t.Name}
	if t.Description != "" {
		fn.Description = openai.String(t.Description)
	}
	if t.Parameters != nil {
		fn.Parameters = shared.FunctionParameters(t.Parameters)
	}
	return openai.ChatCompletionFunctionTool(fn)
}
