package agent

import (
	"context"
	"log/slog"
	"testing"

	"github.com/commonly/runtime/shared/llm"
	"github.com/commonly/runtime/shared/runs"
)

// cyclingModel answers two tool calls then a final answer, forever,
// without recording anything, so the benchmark measures the loop.
type cyclingModel struct{ n int }

func (m *cyclingModel) Complete(context.Context, llm.Request) (*llm.Response, error) {
	m.n++
	if m.n%3 == 0 {
		return answer("done").resp, nil
	}
	return calls(call("c1", "echo", `{"q":"go","n":`+string(rune('0'+m.n%3))+`}`)).resp, nil
}

// BenchmarkTurn is one three-step turn: the loop's own overhead per turn
// (history, estimate, dispatch, encoding, accounting).
func BenchmarkTurn(b *testing.B) {
	h := newHarness(b)
	h.loop.cfg.Model = &cyclingModel{}
	h.loop.cfg.Logger = slog.New(slog.DiscardHandler)
	h.withTools(&fakeTool{name: "echo"})
	h.turn.Checkpoint = nil
	b.ReportAllocs()
	for b.Loop() {
		h.poster.posts = h.poster.posts[:0]
		h.pricer.worstCalls, h.pricer.modelCalls, h.pricer.providers = nil, nil, nil
		h.turn.Tools.(toolset)[0].args, h.turn.Tools.(toolset)[0].envs = nil, nil
		h.turn.Run = &runs.Run{RunID: "r", UserID: "u", Status: runs.StatusRunning}
		if out := h.run(context.Background()); out.Err != nil {
			b.Fatal(out.Err)
		}
	}
}
