package llm_test

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/commonly/runtime/shared/llm"
	"github.com/commonly/runtime/shared/llm/llmtest"
)

// A streamed call asks for its usage, passes its text on as it arrives
// and comes back as the same call unstreamed: message, tool calls,
// reasoning, finish and usage, in each usage shape, with the usage in a
// chunk of its own or on the finish chunk.
func TestStreamedAnswerEqualsUnstreamed(t *testing.T) {
	usages := []llmtest.Usage{
		{Shape: llmtest.OpenAIShape, Prompt: 1200, Cached: 1024, Completion: 80, Reasoning: 40},
		{Shape: llmtest.DeepSeekShape, Prompt: 1200, Cached: 1024, Completion: 80},
		{Shape: llmtest.NullDetailsShape, Prompt: 900, Cached: 512, Completion: 12},
	}
	steps := func(u llmtest.Usage, onChoice bool) []llmtest.Step {
		s := []llmtest.Step{
			llmtest.Text("the answer is 42, as computed").WithUsage(u).WithReasoning("think hard"),
			llmtest.Calls(llmtest.Call("commonly_run_code", `{"code":"print(6*7)"}`), llmtest.Call("commonly_run_code", `{"code":"1"}`)).WithUsage(u),
		}
		for i := range s {
			s[i].UsageOnChoice = onChoice
		}
		return s
	}
	for _, u := range usages {
		for _, onChoice := range []bool{false, true} {
			for i := range 2 {
				// Step i of the script: the first is played through once.
				plain, _ := start(t, 5*time.Second, steps(u, onChoice)...)
				streamed, fake := start(t, 5*time.Second, steps(u, onChoice)...)
				for range i {
					for _, c := range []*llm.Client{plain, streamed} {
						if _, err := c.Complete(context.Background(), userRequest("warm")); err != nil {
							t.Fatal(err)
						}
					}
				}
				want, err := plain.Complete(context.Background(), userRequest("q"))
				if err != nil {
					t.Fatal(err)
				}
				var texts []string
				req := userRequest("q")
				req.Stream, req.OnText = true, func(s string) { texts = append(texts, s) }
				got, err := streamed.Complete(context.Background(), req)
				if err != nil {
					t.Fatalf("shape %d onChoice %v step %d: %v", u.Shape, onChoice, i, err)
				}
				if got.CallID == "" || want.CallID == "" {
					t.Errorf("call ids %q %q", got.CallID, want.CallID)
				}
				got.CallID, want.CallID = "", ""
				if !reflect.DeepEqual(got, want) || got.Usage.CachedPromptTokens == 0 {
					t.Fatalf("shape %d step %d:\nstreamed   %+v\nunstreamed %+v", u.Shape, i, got, want)
				}
				if i == 0 && (len(texts) < 2 || strings.Join(texts, "") != want.Message.Content) {
					t.Errorf("text passed on %q", texts)
				}
				last := fake.Requests()[fake.Count()-1].Body
				if !last.Stream || last.StreamOptions == nil || !last.StreamOptions.IncludeUsage {
					t.Errorf("request stream %v options %+v", last.Stream, last.StreamOptions)
				}
			}
		}
	}
}

// A stream cut mid-answer is an error that says it was cut and how much
// had arrived; one that ends without usage is an answer that says so.
func TestStreamCutAndWithoutUsage(t *testing.T) {
	cut := llmtest.Text("a long answer that never ends well")
	cut.CutAfter = 4
	noUsage := llmtest.Text("fine").WithUsage(llmtest.Usage{Shape: llmtest.NoUsage})
	c, _ := start(t, 5*time.Second, cut, noUsage)
	req := userRequest("q")
	req.Stream = true
	var got strings.Builder
	req.OnText = func(s string) { got.WriteString(s) }
	resp, err := c.Complete(context.Background(), req)
	var ce *llm.CallError
	if resp != nil || !errors.As(err, &ce) || !ce.Cut || !ce.Billed || ce.Received != int64(got.Len()) || ce.Received == 0 {
		t.Fatalf("cut stream: %+v, %#v (received %q)", resp, err, got.String())
	}
	resp, err = c.Complete(context.Background(), req)
	if err != nil || !resp.UsageMissing || resp.Usage != (llm.Usage{}) || resp.Message.Content != "fine" {
		t.Fatalf("stream without usage: %+v, %v", resp, err)
	}
}
