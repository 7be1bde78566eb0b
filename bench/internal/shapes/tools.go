package shapes

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/commonly/runtime/shared/llm"
	"github.com/commonly/runtime/shared/sandbox/e2b/e2btest"
	"github.com/commonly/runtime/shared/tools"
	"github.com/commonly/runtime/shared/tools/search/searchtest"
)

// ContextToolName is the benchmark's context tool.
const ContextToolName = "bench_read_context"

// ContextTool stands in for the pod's context read (commonly_read_context),
// without its 8,000-character cap: it answers the pod's recent messages,
// about as many tokens of them as asked, in that tool's shape.
type ContextTool struct{}

// messageChars is a pod message's length in the answer (the pod tool's
// own cap on one message is 600 characters).
const messageChars = 600

// Spec implements tools.Tool.
func (ContextTool) Spec() llm.ToolSpec {
	return llm.ToolSpec{
		Name:        ContextToolName,
		Description: "Read the pod's recent messages: about as many tokens of them as asked.",
		Parameters: map[string]any{
			"type":                 "object",
			"properties":           map[string]any{"tokens": map[string]any{"type": "integer", "minimum": 1, "maximum": 100_000}},
			"required":             []string{"tokens"},
			"additionalProperties": false,
		},
	}
}

type podMessage struct {
	ID        string `json:"id"`
	Author    string `json:"author"`
	Content   string `json:"content"`
	CreatedAt string `json:"createdAt"`
}

// Call implements tools.Tool.
func (ContextTool) Call(_ context.Context, _ tools.Env, args json.RawMessage) tools.Result {
	var a struct {
		Tokens int `json:"tokens"`
	}
	if err := tools.DecodeArgs(args, &a); err != nil {
		return tools.Result{Err: err}
	}
	if a.Tokens < 1 || a.Tokens > 100_000 {
		return tools.Errorf("%w: tokens must be between 1 and 100000", tools.ErrBadArguments)
	}
	return tools.Result{Output: map[string]any{"messages": podMessages(a.Tokens * CharsPerToken)}}
}

var _ tools.Tool = ContextTool{}

// podMessages are messages of messageChars whose JSON is about size
// bytes: the size of the tool's answer is what the model reads.
func podMessages(size int) []podMessage {
	var msgs []podMessage
	body := text(size/CharsPerToken + 1)
	for i, used := 0, 0; used < size; i++ {
		m := podMessage{
			ID: fmt.Sprintf("m%05d", i), Author: fmt.Sprintf("person-%d", i%7),
			Content: body[:min(messageChars, size-used)], CreatedAt: fmt.Sprintf("2026-12-04T09:%02d:%02dZ", i/60%60, i%60),
		}
		b, _ := json.Marshal(m)
		used += len(b) + 1
		msgs = append(msgs, m)
	}
	return msgs
}

// Program is the code a code turn runs: a short analysis that prints a
// table, as the code tool's users write.
var Program = strings.TrimSpace(`
import statistics
latencies = [212, 198, 240, 1210, 205, 199, 230, 215, 208, 1750, 221, 202]
costs = [0.0031, 0.0029, 0.0035, 0.0120, 0.0030, 0.0028, 0.0034, 0.0032, 0.0031, 0.0150, 0.0033, 0.0030]
print(f"{'turn':>4} {'latency ms':>10} {'cost $':>8}")
for i, (l, c) in enumerate(zip(latencies, costs)):
    print(f"{i:>4} {l:>10} {c:>8.4f}")
print("median latency", statistics.median(latencies), "p95", sorted(latencies)[int(0.95 * len(latencies))])
print("mean cost", round(statistics.mean(costs), 5))
`)

// Execute plays the fake E2B's execution of Program: its printed table,
// about 1.5 KB, in a few stdout messages, as the interpreter streams it.
func Execute(_, _, _ string, w *e2btest.StreamWriter) {
	for i := range 4 {
		var b strings.Builder
		for j := range 12 {
			fmt.Fprintf(&b, "%4d %10d %8.4f\n", i*12+j, 200+(i*12+j)*7%90, 0.003+float64((i*12+j)%9)/10000)
		}
		if !w.Stdout(b.String()) {
			return
		}
	}
	w.Stdout("median latency 213.5 p95 1750\nmean cost 0.00536\n")
}

// Hits are the search results every query gets: five pages of about
// 2,000 characters, of which the tool keeps its snippet.
func Hits() []searchtest.Hit {
	var hits []searchtest.Hit
	for i := range 5 {
		hits = append(hits, searchtest.Hit{
			Title: fmt.Sprintf("Release notes, part %d", i+1),
			URL:   fmt.Sprintf("https://example.com/releases/%d", i+1),
			Text:  text(500),
			Highlights: []string{
				strings.TrimSpace(text(40)),
			},
		})
	}
	return hits
}
