package e2b_test

import (
	"bytes"
	"errors"
	"io"
	"reflect"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/commonly/runtime/shared/sandbox"
	"github.com/commonly/runtime/shared/sandbox/e2b"
)

func TestReadExecution(t *testing.T) {
	tests := []struct {
		name    string
		stream  string
		want    sandbox.Execution
		wantErr error
	}{
		{
			name: "reference example",
			stream: `{"type": "number_of_executions", "execution_count": 3}
{"type": "stdout", "text": "2\n", "timestamp": "2026-01-01T00:00:01.123456+00:00"}
{"type": "keepalive"}
{"type": "error", "name": "NameError", "value": "name 'x' is not defined", "traceback": "..."}
{"type": "end_of_execution"}
`,
			want: sandbox.Execution{Stdout: "2\n", Error: &sandbox.ExecError{Name: "NameError", Value: "name 'x' is not defined", Traceback: "..."}},
		},
		{
			name: "stdout and stderr accumulate, results keep text",
			stream: `{"type": "stdout", "text": "a"}
{"type": "stderr", "text": "warn\n"}
{"type": "stdout", "text": "b\n"}
{"type": "result", "text": "42", "is_main_result": true, "extra": {}}
{"type": "end_of_execution"}
`,
			want: sandbox.Execution{Stdout: "ab\n", Stderr: "warn\n", Results: []string{"42"}},
		},
		{
			name: "rich results without text are named, empty ones dropped",
			stream: `{"type": "result", "png": "iVBORw0KGgo=", "html": "<b>x</b>", "is_main_result": false}
{"type": "result", "extra": {}, "is_main_result": false}
{"type": "result", "markdown": null}
{"type": "end_of_execution"}
`,
			want: sandbox.Execution{Results: []string{"[html, png output not shown]"}},
		},
		{
			name: "every rich format is named, in name order",
			stream: `{"type": "result", "svg": "s", "png": "p", "pdf": "p", "markdown": "m", "latex": "l", "json": {}, "jpeg": "j", "javascript": "j", "html": "h", "data": {}, "chart": {}}
{"type": "end_of_execution"}
`,
			want: sandbox.Execution{Results: []string{"[chart, data, html, javascript, jpeg, json, latex, markdown, pdf, png, svg output not shown]"}},
		},
		{
			name: "unknown types, blank and malformed lines are skipped",
			stream: `{"type": "future_thing", "text": "no"}

not json
{"type": "stdout", "text": "ok"}
{"type": "end_of_execution"}
`,
			want: sandbox.Execution{Stdout: "ok"},
		},
		{
			name:   "escaped non-ASCII as Python writes it",
			stream: `{"type": "stdout", "text": "caf\u00e9 \ud83d\ude00"}` + "\n" + `{"type": "end_of_execution"}` + "\n",
			want:   sandbox.Execution{Stdout: "café 😀"},
		},
		{
			name:   "CRLF line ends",
			stream: "{\"type\": \"stdout\", \"text\": \"x\"}\r\n{\"type\": \"end_of_execution\"}\r\n",
			want:   sandbox.Execution{Stdout: "x"},
		},
		{
			name:   "end_of_execution on a last line without newline",
			stream: `{"type": "end_of_execution"}`,
			want:   sandbox.Execution{},
		},
		{
			name:   "lines after end_of_execution are not read",
			stream: `{"type": "end_of_execution"}` + "\n" + `{"type": "stdout", "text": "late"}` + "\n",
			want:   sandbox.Execution{},
		},
		{
			name: "synthetic kernel error is a code error, not a loss",
			stream: `{"type": "error", "name": "UnexpectedEndOfExecution", "value": "Connection to the execution was closed before the execution was finished", "traceback": ""}
{"type": "end_of_execution"}
`,
			want: sandbox.Execution{Error: &sandbox.ExecError{Name: "UnexpectedEndOfExecution", Value: "Connection to the execution was closed before the execution was finished"}},
		},
		{
			name:    "stream cut without end_of_execution keeps partial output",
			stream:  `{"type": "stdout", "text": "partial"}` + "\n" + `{"type": "keepalive"}` + "\n",
			want:    sandbox.Execution{Stdout: "partial"},
			wantErr: sandbox.ErrLost,
		},
		{
			name:    "empty stream",
			stream:  "",
			wantErr: sandbox.ErrLost,
		},
		{
			name:    "cut in the middle of a line",
			stream:  `{"type": "stdout", "text": "a"}` + "\n" + `{"type": "end_of_exe`,
			want:    sandbox.Execution{Stdout: "a"},
			wantErr: sandbox.ErrLost,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := e2b.ReadExecution(strings.NewReader(tt.stream))
			if !errors.Is(err, tt.wantErr) || (tt.wantErr == nil) != (err == nil) {
				t.Fatalf("err = %v, want %v", err, tt.wantErr)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got  %+v\nwant %+v", got, tt.want)
			}
		})
	}
}

func TestReadExecutionBrokenReaderIsLost(t *testing.T) {
	r := io.MultiReader(strings.NewReader(`{"type": "stdout", "text": "a"}`+"\n"), iotest.ErrReader(errors.New("connection reset")))
	got, err := e2b.ReadExecution(r)
	if !errors.Is(err, sandbox.ErrLost) || !strings.Contains(err.Error(), "connection reset") {
		t.Fatalf("err = %v, want ErrLost with the cause", err)
	}
	if got.Stdout != "a" {
		t.Errorf("Stdout = %q, want the partial output", got.Stdout)
	}
}

func TestReadExecutionOneByteReads(t *testing.T) {
	stream := `{"type": "stdout", "text": "hello"}` + "\n" + `{"type": "end_of_execution"}` + "\n"
	got, err := e2b.ReadExecution(iotest.OneByteReader(strings.NewReader(stream)))
	if err != nil || got.Stdout != "hello" {
		t.Fatalf("got %+v, %v", got, err)
	}
}

func TestReadExecutionBoundsMemory(t *testing.T) {
	t.Run("many stdout lines are capped with a marker", func(t *testing.T) {
		line := `{"type": "stdout", "text": "` + strings.Repeat("x", 1000) + `"}` + "\n"
		stream := strings.Repeat(line, 3000) + `{"type": "stdout", "text": "tail"}` + "\n" + `{"type": "end_of_execution"}` + "\n"
		got, err := e2b.ReadExecution(strings.NewReader(stream))
		if err != nil {
			t.Fatal(err)
		}
		if !got.Truncated || !strings.HasSuffix(got.Stdout, sandbox.TruncatedMarker) {
			t.Errorf("Truncated = %v, suffix %q", got.Truncated, tail(got.Stdout))
		}
		if len(got.Stdout) != sandbox.MaxStreamBytes+len(sandbox.TruncatedMarker) {
			t.Errorf("len(Stdout) = %d, want %d", len(got.Stdout), sandbox.MaxStreamBytes+len(sandbox.TruncatedMarker))
		}
	})
	t.Run("an over-long line is skipped and the stream goes on", func(t *testing.T) {
		huge := `{"type": "result", "png": "` + strings.Repeat("A", 5<<20) + `"}` + "\n"
		stream := huge + `{"type": "stdout", "text": "after"}` + "\n" + `{"type": "end_of_execution"}` + "\n"
		got, err := e2b.ReadExecution(strings.NewReader(stream))
		if err != nil {
			t.Fatal(err)
		}
		if got.Stdout != "after" || !got.Truncated || len(got.Results) != 0 {
			t.Errorf("got Stdout %q Truncated %v Results %d", got.Stdout, got.Truncated, len(got.Results))
		}
	})
	t.Run("results are capped in number", func(t *testing.T) {
		stream := strings.Repeat(`{"type": "result", "text": "r"}`+"\n", 500) + `{"type": "end_of_execution"}` + "\n"
		got, err := e2b.ReadExecution(strings.NewReader(stream))
		if err != nil {
			t.Fatal(err)
		}
		if len(got.Results) != 100 || !got.Truncated {
			t.Errorf("len(Results) = %d, Truncated = %v", len(got.Results), got.Truncated)
		}
	})
}

func tail(s string) string {
	if len(s) > 40 {
		return s[len(s)-40:]
	}
	return s
}

// FuzzReadExecution: whatever a sandbox sends, the reader neither panics
// nor holds more than its bounds, and only a complete stream succeeds.
func FuzzReadExecution(f *testing.F) {
	f.Add([]byte(`{"type": "stdout", "text": "2\n"}` + "\n" + `{"type": "end_of_execution"}` + "\n"))
	f.Add([]byte(`{"type": "error", "name": "E", "value": "v", "traceback": "t"}` + "\n"))
	f.Add([]byte(`{"type": "result", "text": "x", "png": "AA==", "json": {"a": [1]}}` + "\n" + `{"type":"end_of_execution"}`))
	f.Add([]byte("\n\n{\"type\": \"keepalive\"}\r\n{"))
	f.Add([]byte(`{"type": "stdout", "text": null}` + "\n" + `{"type": ["end_of_execution"]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		got, err := e2b.ReadExecution(bytes.NewReader(data))
		if err != nil && !errors.Is(err, sandbox.ErrLost) {
			t.Fatalf("error %v does not wrap ErrLost", err)
		}
		if err == nil && !bytes.Contains(data, []byte("{")) {
			t.Fatalf("a stream without a JSON object succeeded: %q", data)
		}
		limit := sandbox.MaxStreamBytes + len(sandbox.TruncatedMarker)
		if len(got.Stdout) > limit || len(got.Stderr) > limit || len(got.Results) > 100 {
			t.Fatalf("unbounded: stdout %d stderr %d results %d", len(got.Stdout), len(got.Stderr), len(got.Results))
		}
		total := 0
		for _, r := range got.Results {
			total += len(r)
		}
		if total > limit {
			t.Fatalf("results hold %d bytes", total)
		}
	})
}

// BenchmarkReadExecution reads a typical chatty execution: many short
// stdout lines, keepalives and a result.
func BenchmarkReadExecution(b *testing.B) {
	var sb strings.Builder
	sb.WriteString(`{"type": "number_of_executions", "execution_count": 1}` + "\n")
	for i := range 2000 {
		if i%100 == 0 {
			sb.WriteString(`{"type": "keepalive"}` + "\n")
		}
		sb.WriteString(`{"type": "stdout", "text": "line of output number ` + strings.Repeat("x", 40) + `\n", "timestamp": "2026-01-01T00:00:01.123456+00:00"}` + "\n")
	}
	sb.WriteString(`{"type": "result", "text": "42", "is_main_result": true, "extra": {}}` + "\n")
	sb.WriteString(`{"type": "end_of_execution"}` + "\n")
	stream := sb.String()
	b.SetBytes(int64(len(stream)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := e2b.ReadExecution(strings.NewReader(stream)); err != nil {
			b.Fatal(err)
		}
	}
}
