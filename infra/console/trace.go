package console

import (
	"bufio"
	"encoding/json"
	"errors"
	"io/fs"
	"net/http"
	"os"
	"regexp"
	"slices"
	"strings"
	"time"
)

// Span is one span of a trace as the waterfall draws it.
type Span struct {
	TraceID    string         `json:"traceId"`
	SpanID     string         `json:"spanId"`
	ParentID   string         `json:"parentId,omitempty"`
	Name       string         `json:"name"`
	Start      time.Time      `json:"start"`
	End        time.Time      `json:"end"`
	DurationMs float64        `json:"durationMs"`
	Status     string         `json:"status"`
	Attributes map[string]any `json:"attributes"`
}

// fileSpan is a line of TRACES_FILE: the OpenTelemetry SDK's stdout
// exporter's form of a span.
type fileSpan struct {
	Name        string
	SpanContext struct{ TraceID, SpanID string }
	Parent      struct{ SpanID string }
	StartTime   time.Time
	EndTime     time.Time
	Attributes  []struct {
		Key   string
		Value struct{ Value any }
	}
	Status struct{ Code string }
}

// ReadTrace reads the spans of one trace from a TRACES_FILE, in start
// order. A missing file holds no spans.
func ReadTrace(path, traceID string) ([]Span, error) {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return []Span{}, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	spans := []Span{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64<<10), 4<<20)
	for sc.Scan() {
		var s fileSpan
		if json.Unmarshal(sc.Bytes(), &s) != nil || s.SpanContext.TraceID != traceID {
			continue
		}
		parent := s.Parent.SpanID
		if strings.Trim(parent, "0") == "" {
			parent = "" // a root: the exporter writes the zero id
		}
		attrs := make(map[string]any, len(s.Attributes))
		for _, a := range s.Attributes {
			attrs[a.Key] = a.Value.Value
		}
		spans = append(spans, Span{
			TraceID: traceID, SpanID: s.SpanContext.SpanID, ParentID: parent, Name: s.Name,
			Start: s.StartTime, End: s.EndTime, DurationMs: float64(s.EndTime.Sub(s.StartTime).Microseconds()) / 1000,
			Status: s.Status.Code, Attributes: attrs,
		})
	}
	slices.SortStableFunc(spans, func(a, b Span) int { return a.Start.Compare(b.Start) })
	return spans, sc.Err()
}

// traceIDPattern is a W3C trace id, as a run's traceId gives it.
var traceIDPattern = regexp.MustCompile(`^[0-9a-f]{32}$`)

// trace answers a trace's spans, after the stack has written out the
// spans it holds.
func (c *Console) trace(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("traceId")
	if !traceIDPattern.MatchString(id) {
		http.Error(w, "a trace id is 32 hex digits", http.StatusBadRequest)
		return
	}
	if c.cfg.TracesFile == "" {
		writeJSON(w, map[string]any{"traceId": id, "spans": []Span{}, "note": "this stack writes no spans (TRACES_FILE)"})
		return
	}
	if c.cfg.Flush != nil {
		if err := c.cfg.Flush(r.Context()); err != nil {
			http.Error(w, "could not flush the spans: "+err.Error(), http.StatusServiceUnavailable)
			return
		}
	}
	spans, err := ReadTrace(c.cfg.TracesFile, id)
	if err != nil {
		http.Error(w, "could not read "+c.cfg.TracesFile+": "+err.Error(), http.StatusServiceUnavailable)
		return
	}
	writeJSON(w, map[string]any{"traceId": id, "spans": spans})
}
