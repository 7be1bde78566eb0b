package agent_test

import (
	"context"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/commonly/runtime/shared/agent"
	"github.com/commonly/runtime/shared/llm"
	"github.com/commonly/runtime/shared/llm/llmtest"
	"github.com/commonly/runtime/shared/pricing"
	"github.com/commonly/runtime/shared/runs"
	"github.com/commonly/runtime/shared/tools"
)

const key = "sk-test-stream-0123456789"

type poster struct{}

func (poster) Post(context.Context, tools.Env, string) error { return nil }

type recorder struct{ ds []runs.EventData }

func (r *recorder) Record(d runs.EventData) { r.ds = append(r.ds, d) }

// runOnce runs one turn of the real loop on the real client against the
// scripted LiteLLM, priced with the real table.
func runOnce(t *testing.T, stream bool, steps ...llmtest.Step) (*runs.Run, *recorder) {
	t.Helper()
	srv := httptest.NewServer(llmtest.NewServer(key, steps...))
	t.Cleanup(srv.Close)
	model, err := llm.New(llm.Config{BaseURL: srv.URL, APIKey: key, Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	prices, err := pricing.Load("")
	if err != nil {
		t.Fatal(err)
	}
	loop, err := agent.New(agent.Config{Model: model, Pricer: prices, Poster: poster{}, ModelName: "deepseek-v4-flash", Stream: stream})
	if err != nil {
		t.Fatal(err)
	}
	run := &runs.Run{RunID: "run-1", UserID: "u1", Status: runs.StatusRunning}
	rec := &recorder{}
	loop.Run(context.Background(), agent.TurnInput{Run: run, Message: "what is 6 times 7?", Events: rec})
	return run, rec
}

// A streamed turn records and prices exactly what the same turn
// unstreamed does, cached tokens included, in both usage shapes.
func TestStreamedTurnPricedAsUnstreamed(t *testing.T) {
	for _, shape := range []llmtest.UsageShape{llmtest.OpenAIShape, llmtest.DeepSeekShape, llmtest.NullDetailsShape} {
		u := llmtest.Usage{Shape: shape, Prompt: 1200, Cached: 1024, Completion: 80}
		step := llmtest.Text("six times seven is 42").WithUsage(u)
		plain, _ := runOnce(t, false, step)
		streamed, rec := runOnce(t, true, step)
		if plain.Status != runs.StatusSucceeded || streamed.Status != runs.StatusSucceeded {
			t.Fatalf("statuses %s %s: %s", plain.Status, streamed.Status, streamed.ErrorMessage)
		}
		if streamed.CostMicros != plain.CostMicros || streamed.Tokens != plain.Tokens || streamed.Cost != plain.Cost ||
			streamed.Tokens.CachedPrompt != 1024 || streamed.CostMicros == 0 || streamed.FinalMessage != plain.FinalMessage {
			t.Errorf("shape %d: streamed %d µ$ %+v, unstreamed %d µ$ %+v", shape, streamed.CostMicros, streamed.Tokens, plain.CostMicros, plain.Tokens)
		}
		var text strings.Builder
		for _, d := range rec.ds {
			if td, ok := d.(runs.TextDelta); ok {
				text.WriteString(td.Text)
			}
		}
		if text.String() != "six times seven is 42" {
			t.Errorf("text passed on %q", text.String())
		}
	}
}

// A stream cut mid-answer, and one that ends without usage, are priced
// from what was sent and received, never at zero, and marked estimated.
func TestCutStreamIsPricedNeverZero(t *testing.T) {
	cut := llmtest.Text("a long answer that stops here and never finishes")
	cut.CutAfter = 5
	run, _ := runOnce(t, true, cut)
	if run.Status != runs.StatusFailed || run.ErrorKind != runs.ErrLLM || len(run.Steps) != 1 ||
		!run.Steps[0].Estimated || run.CostMicros <= 0 || run.Tokens.Completion <= 0 || run.Tokens.Prompt <= 0 {
		t.Fatalf("cut stream: %s %s, steps %+v, cost %d", run.Status, run.ErrorKind, run.Steps, run.CostMicros)
	}
	noUsage := llmtest.Text("fine").WithUsage(llmtest.Usage{Shape: llmtest.NoUsage})
	for _, stream := range []bool{false, true} {
		run, _ = runOnce(t, stream, noUsage)
		if run.Status != runs.StatusSucceeded || !run.Steps[0].Estimated || run.CostMicros <= 0 || run.Tokens.Completion != 1 {
			t.Errorf("stream %v without usage: %s, steps %+v, cost %d", stream, run.Status, run.Steps, run.CostMicros)
		}
	}
}
