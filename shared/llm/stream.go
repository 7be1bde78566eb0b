package llm

import (
	"context"
	"errors"
	"net/http"
	"sort"
	"strings"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/packages/ssestream"
)

// stream makes one streamed chat-completions call (reference §5): the
// text goes to req.OnText as it arrives, and the answer is assembled
// into the Response Complete returns, with the same checks. Usage is the
// last non-null usage of the stream, read with the unstreamed call's
// parser, so a streamed call is priced as the same call unstreamed.
// openai-go's ChatCompletionAccumulator is not used: it adds up usage
// over chunks (a server repeating it would be counted twice) and drops a
// chunk whose id differs, as some proxies send the usage chunk.
func (c *Client) stream(ctx, callCtx context.Context, params openai.ChatCompletionNewParams, req Request) (*Response, error) {
	params.StreamOptions = openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)}
	var httpResp *http.Response
	sdk := c.chat.NewStreaming(callCtx, params, option.WithResponseInto(&httpResp))
	defer sdk.Close()
	// The SDK's stream has sent the request and read nothing yet; the
	// chunks are read from the same response through openai-go's SSE
	// decoder and Stream, decoded into the small chunk type.
	var chunks *ssestream.Stream[chunk]
	if err := sdk.Err(); err != nil || httpResp == nil {
		chunks = ssestream.NewStream[chunk](nil, err)
	} else {
		chunks = ssestream.NewStream[chunk](ssestream.NewDecoder(httpResp), nil)
	}
	defer chunks.Close()

	var a assembly
	for chunks.Next() {
		a.add(chunks.Current(), req.OnText)
	}
	err := chunks.Err()
	if err == nil && a.finish == "" {
		// Ended without a finish_reason: a proxy that swallowed an error,
		// or a cut it did not report.
		err = errors.New("stream ended without a finish_reason")
	}
	if err != nil {
		if a.chunks == 0 {
			return nil, c.failure(ctx, callCtx, httpResp, err)
		}
		return c.cut(ctx, httpResp, &a, err)
	}
	return c.decodeStream(&a, httpResp)
}

// cut is a stream that failed after its first chunk. With its usage it
// is a response priced from it, with the error; without, the error says
// how much arrived, for the loop's estimate: never priced at zero.
func (c *Client) cut(ctx context.Context, httpResp *http.Response, a *assembly, err error) (*Response, error) {
	status := http.StatusOK
	if httpResp != nil {
		status = httpResp.StatusCode
	}
	ce := &CallError{Kind: ErrCall, Status: status, Message: "the answer stream was cut", Billed: true, Cut: true, Received: a.received()}
	var se *ssestream.StreamError
	switch {
	case errors.As(err, &se):
		ce.Message = "the proxy reported an error in the answer stream"
		ce.Detail = c.scrub(se.Message)
	case ctx.Err() != nil:
		ce.Message = "call cancelled by the caller"
	default:
		ce.Detail = c.scrub(err.Error())
	}
	if a.usage == "" {
		return nil, ce
	}
	return a.response(httpResp), ce
}

// decodeStream checks a complete stream as decode checks an answer.
func (c *Client) decodeStream(a *assembly, httpResp *http.Response) (*Response, error) {
	resp := a.response(httpResp)
	for _, tc := range resp.Message.ToolCalls {
		if tc.ID == "" || tc.Name == "" {
			return resp, callError(ErrCall, http.StatusOK, "tool call without id or name")
		}
	}
	return resp, c.judge(resp, a.finish, a.refusal.String(), http.StatusOK)
}

// assembly is a streamed answer put together chunk by chunk.
type assembly struct {
	chunks    int
	model     string
	content   strings.Builder
	reasoning strings.Builder
	refusal   strings.Builder
	calls     map[int64]*streamCall
	finish    string
	// usage is the raw JSON of the last non-null usage.
	usage string
}

func (a *assembly) add(ch chunk, onText func(string)) {
	a.chunks++
	if ch.Model != "" {
		a.model = ch.Model
	}
	if raw := ch.Usage; len(raw) > 0 && string(raw) != "null" {
		a.usage = string(raw)
	}
	if len(ch.Choices) == 0 {
		return
	}
	choice := ch.Choices[0]
	d := choice.Delta
	if d.Content != "" {
		a.content.WriteString(d.Content)
		if onText != nil {
			onText(d.Content)
		}
	}
	a.refusal.WriteString(d.Refusal)
	a.reasoning.WriteString(d.Reasoning)
	for _, tc := range d.ToolCalls {
		if a.calls == nil {
			a.calls = map[int64]*streamCall{}
		}
		call := a.calls[tc.Index]
		if call == nil {
			call = &streamCall{}
			a.calls[tc.Index] = call
		}
		if tc.ID != "" {
			call.id = tc.ID
		}
		if tc.Function.Name != "" {
			call.name = tc.Function.Name
		}
		// A builder: the arguments arrive in many small pieces.
		call.args.WriteString(tc.Function.Arguments)
	}
	if choice.FinishReason != "" {
		a.finish = choice.FinishReason
	}
}

// streamCall is one tool call as its pieces arrive.
type streamCall struct {
	id, name string
	args     strings.Builder
}

// received is the bytes of answer that arrived: text, reasoning and
// tool-call arguments.
func (a *assembly) received() int64 {
	n := int64(a.content.Len() + a.reasoning.Len() + a.refusal.Len())
	for _, c := range a.calls {
		n += int64(len(c.id) + len(c.name) + c.args.Len())
	}
	return n
}

// response is the answer assembled so far, priced from its usage when
// one arrived.
func (a *assembly) response(httpResp *http.Response) *Response {
	resp := &Response{Model: a.model, FinishReason: a.finish, Message: Message{
		Role: RoleAssistant, Content: a.content.String(), ReasoningContent: a.reasoning.String(),
	}, Usage: parseUsage(a.usage), UsageMissing: a.usage == ""}
	if httpResp != nil {
		resp.CallID = httpResp.Header.Get(CallIDHeader)
	}
	idx := make([]int64, 0, len(a.calls))
	for i := range a.calls {
		idx = append(idx, i)
	}
	sort.Slice(idx, func(i, j int) bool { return idx[i] < idx[j] })
	for _, i := range idx {
		c := a.calls[i]
		resp.Message.ToolCalls = append(resp.Message.ToolCalls, ToolCall{ID: c.id, Name: c.name, Arguments: c.args.String()})
	}
	return resp
}
