package main

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/commonly/runtime/infra/console"
	"github.com/commonly/runtime/shared/runs"
	"github.com/commonly/runtime/shared/tracing"
)

// trace is the stack's tracer provider and the file it writes
// (TRACES_FILE; "" when it writes elsewhere or is off).
type trace struct {
	provider *tracing.Provider
	file     string
}

// printTrace prints the turn's span tree from TRACES_FILE after the
// transcript: each span's name and duration, with tokens and cost where
// it has them. Nothing when tracing is off or writes elsewhere.
func printTrace(ctx context.Context, out io.Writer, tr trace, r *runs.Run) {
	if tr.provider == nil || tr.file == "" || r.TraceID == "" {
		return
	}
	if err := tr.provider.Flush(ctx); err != nil {
		fmt.Fprintf(out, "\n  trace %s: not flushed: %v\n", r.TraceID, err)
		return
	}
	spans, err := console.ReadTrace(tr.file, r.TraceID)
	if err != nil || len(spans) == 0 {
		fmt.Fprintf(out, "\n  trace %s: not in %s (%v)\n", r.TraceID, tr.file, err)
		return
	}
	fmt.Fprintf(out, "\n  trace %s (%d spans, in %s):\n", r.TraceID, len(spans), tr.file)
	writeTree(out, spans)
}

// writeTree writes spans as a tree, children in start order under their
// parent; a span whose parent is not among them is a root.
func writeTree(out io.Writer, spans []console.Span) {
	byID := map[string]bool{}
	for _, s := range spans {
		byID[s.SpanID] = true
	}
	children := map[string][]console.Span{}
	for _, s := range spans {
		p := s.ParentID
		if !byID[p] {
			p = ""
		}
		children[p] = append(children[p], s)
	}
	var walk func(parent string, depth int)
	walk = func(parent string, depth int) {
		for _, s := range children[parent] {
			fmt.Fprintf(out, "  %s%-*s %7.1f ms%s\n", strings.Repeat("  ", depth), 40-2*depth, s.Name, s.DurationMs, spanNotes(s))
			walk(s.SpanID, depth+1)
		}
	}
	walk("", 1)
}

// spanNotes are a span's tokens, cost and outcome, where it has them.
func spanNotes(s console.Span) string {
	var b strings.Builder
	in, okIn := s.Attributes["gen_ai.usage.input_tokens"]
	outT, okOut := s.Attributes["gen_ai.usage.output_tokens"]
	if okIn || okOut {
		fmt.Fprintf(&b, "  tokens %v in / %v out", in, outT)
	}
	if c, ok := s.Attributes["commonly.cost_micros"]; ok {
		if f, ok := c.(float64); ok {
			fmt.Fprintf(&b, "  $%.6f", f/1e6)
		}
	}
	if st, ok := s.Attributes["commonly.run.status"]; ok {
		fmt.Fprintf(&b, "  %v", st)
	}
	if s.Status == "Error" {
		et := s.Attributes["error.type"]
		fmt.Fprintf(&b, "  ERROR %v", et)
	}
	return b.String()
}
