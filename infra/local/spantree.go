package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/commonly/runtime/shared/runs"
	"github.com/commonly/runtime/shared/tracing"
)

// fileSpan is what the span tree needs of one line of TRACES_FILE (the
// OpenTelemetry SDK's stdout exporter format).
type fileSpan struct {
	Name        string
	SpanContext struct{ TraceID, SpanID string }
	Parent      struct{ SpanID string }
	StartTime   time.Time
	EndTime     time.Time
	Attributes  []struct {
		Key   string
		Value struct {
			Type  string
			Value any
		}
	}
	Status struct{ Code string }
}

func (s *fileSpan) attr(key string) (any, bool) {
	for _, a := range s.Attributes {
		if a.Key == key {
			return a.Value.Value, true
		}
	}
	return nil, false
}

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
	spans, err := readTrace(tr.file, r.TraceID)
	if err != nil || len(spans) == 0 {
		fmt.Fprintf(out, "\n  trace %s: not in %s (%v)\n", r.TraceID, tr.file, err)
		return
	}
	fmt.Fprintf(out, "\n  trace %s (%d spans, in %s):\n", r.TraceID, len(spans), tr.file)
	writeTree(out, spans)
}

// readTrace reads the spans of one trace from a JSON-lines file.
func readTrace(path, traceID string) ([]*fileSpan, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var spans []*fileSpan
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64<<10), 4<<20)
	for sc.Scan() {
		var s fileSpan
		if json.Unmarshal(sc.Bytes(), &s) == nil && s.SpanContext.TraceID == traceID {
			spans = append(spans, &s)
		}
	}
	return spans, sc.Err()
}

// writeTree writes spans as a tree, children in start order under their
// parent; a span whose parent is not among them is a root.
func writeTree(out io.Writer, spans []*fileSpan) {
	byID := map[string]bool{}
	for _, s := range spans {
		byID[s.SpanContext.SpanID] = true
	}
	children := map[string][]*fileSpan{}
	for _, s := range spans {
		p := s.Parent.SpanID
		if !byID[p] {
			p = ""
		}
		children[p] = append(children[p], s)
	}
	for _, cs := range children {
		slices.SortFunc(cs, func(a, b *fileSpan) int { return a.StartTime.Compare(b.StartTime) })
	}
	var walk func(parent string, depth int)
	walk = func(parent string, depth int) {
		for _, s := range children[parent] {
			fmt.Fprintf(out, "  %s%-*s %7.1f ms%s\n", strings.Repeat("  ", depth), 40-2*depth, s.Name,
				float64(s.EndTime.Sub(s.StartTime).Microseconds())/1000, spanNotes(s))
			walk(s.SpanContext.SpanID, depth+1)
		}
	}
	walk("", 1)
}

// spanNotes are a span's tokens, cost and outcome, where it has them.
func spanNotes(s *fileSpan) string {
	var b strings.Builder
	in, okIn := s.attr("gen_ai.usage.input_tokens")
	outT, okOut := s.attr("gen_ai.usage.output_tokens")
	if okIn || okOut {
		fmt.Fprintf(&b, "  tokens %v in / %v out", in, outT)
	}
	if c, ok := s.attr("commonly.cost_micros"); ok {
		if f, ok := c.(float64); ok {
			fmt.Fprintf(&b, "  $%.6f", f/1e6)
		}
	}
	if st, ok := s.attr("commonly.run.status"); ok {
		fmt.Fprintf(&b, "  %v", st)
	}
	if s.Status.Code == "Error" {
		et, _ := s.attr("error.type")
		fmt.Fprintf(&b, "  ERROR %v", et)
	}
	return b.String()
}
