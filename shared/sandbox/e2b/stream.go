package e2b

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/commonly/runtime/shared/sandbox"
	"github.com/commonly/runtime/shared/textcap"
)

// Bounds of the execute stream reader. Together they cap what one stream
// can make us hold at about 4×MaxStreamBytes + maxLine, whatever the
// sandbox sends.
const (
	// maxLine is the longest NDJSON line decoded. A longer one (a large
	// image, a huge print) is skipped and the execution marked truncated.
	maxLine = 2 << 20
	// maxResults bounds the number of results kept.
	maxResults = 100
)

// line types of the code interpreter stream.
const (
	typeStdout         = "stdout"
	typeStderr         = "stderr"
	typeResult         = "result"
	typeError          = "error"
	typeEndOfExecution = "end_of_execution"
)

// streamLine is one NDJSON message. Rich result formats are only noted as
// present: the model reads text, and decoding base64 images would cost
// memory for nothing.
type streamLine struct {
	Type      string  `json:"type"`
	Text      *string `json:"text"`
	Name      string  `json:"name"`
	Value     string  `json:"value"`
	Traceback string  `json:"traceback"`

	Markdown   present `json:"markdown"`
	HTML       present `json:"html"`
	SVG        present `json:"svg"`
	PNG        present `json:"png"`
	JPEG       present `json:"jpeg"`
	PDF        present `json:"pdf"`
	LaTeX      present `json:"latex"`
	JavaScript present `json:"javascript"`
	JSON       present `json:"json"`
	Data       present `json:"data"`
	Chart      present `json:"chart"`
}

// present records that a field was sent (and not null) without keeping it.
type present bool

func (p *present) UnmarshalJSON(b []byte) error {
	*p = string(b) != "null"
	return nil
}

// formats names the rich formats the line carries, in name order.
func (l *streamLine) formats() []string {
	var f []string
	for _, format := range [...]struct {
		name string
		ok   present
	}{ // sorted by name
		{"chart", l.Chart}, {"data", l.Data}, {"html", l.HTML}, {"javascript", l.JavaScript},
		{"jpeg", l.JPEG}, {"json", l.JSON}, {"latex", l.LaTeX}, {"markdown", l.Markdown},
		{"pdf", l.PDF}, {"png", l.PNG}, {"svg", l.SVG},
	} {
		if format.ok {
			f = append(f, format.name)
		}
	}
	return f
}

// ReadExecution reads a code interpreter /execute stream to its
// end_of_execution line. It skips keepalives, unknown types, blank and
// malformed lines. A stream that ends or breaks without end_of_execution
// is the sandbox dying under us: the error wraps sandbox.ErrLost. On error the
// Execution holds what was read so far. Memory is bounded whatever r
// yields (see MaxStreamBytes).
func ReadExecution(r io.Reader) (sandbox.Execution, error) { return ReadExecutionTo(r, nil) }

// ReadExecutionTo is ReadExecution handing each stdout and stderr line's
// text to out as it is read (the interpreter sends a line per print).
func ReadExecutionTo(r io.Reader, out sandbox.Output) (sandbox.Execution, error) {
	br := bufio.NewReaderSize(r, 64<<10)
	acc := newAccumulator()
	acc.out = out
	for {
		line, tooLong, err := readLine(br)
		if tooLong {
			acc.truncated = true
		} else if len(line) > 0 {
			var msg streamLine
			if json.Unmarshal(line, &msg) == nil {
				if msg.Type == typeEndOfExecution {
					return acc.execution(), nil
				}
				acc.add(&msg)
			}
		}
		if err != nil {
			if errors.Is(err, io.EOF) {
				return acc.execution(), fmt.Errorf("e2b: execute stream ended without end_of_execution: %w", sandbox.ErrLost)
			}
			// A cut connection: the stream is as incomplete as at EOF.
			return acc.execution(), fmt.Errorf("e2b: execute stream broken: %w: %w", sandbox.ErrLost, err)
		}
	}
}

// readLine returns the next line without its newline. A line longer than
// maxLine is consumed and dropped (tooLong). err is set with the last
// bytes of a stream that does not end in a newline.
func readLine(br *bufio.Reader) (line []byte, tooLong bool, err error) {
	var buf []byte
	for {
		chunk, err := br.ReadSlice('\n')
		if !tooLong {
			if len(buf)+len(chunk) > maxLine+1 { // +1: the newline itself
				tooLong, buf = true, nil
			} else {
				buf = append(buf, chunk...)
			}
		}
		switch {
		case err == nil:
			return trimNewline(buf), tooLong, nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		default:
			return trimNewline(buf), tooLong, err
		}
	}
}

func trimNewline(b []byte) []byte {
	if n := len(b); n > 0 && b[n-1] == '\n' {
		b = b[:n-1]
		if n := len(b); n > 0 && b[n-1] == '\r' {
			b = b[:n-1]
		}
	}
	return b
}

// accumulator gathers an execution within MaxStreamBytes per stream.
type accumulator struct {
	stdout, stderr *sandbox.CappedBuffer
	results        []string
	resultBytes    int
	err            *sandbox.ExecError
	truncated      bool
	out            sandbox.Output // nil: nothing streamed
}

func newAccumulator() *accumulator {
	return &accumulator{
		stdout: sandbox.NewCappedBuffer(sandbox.MaxStreamBytes),
		stderr: sandbox.NewCappedBuffer(sandbox.MaxStreamBytes),
	}
}

func (a *accumulator) add(m *streamLine) {
	switch m.Type {
	case typeStdout:
		if m.Text != nil {
			a.stdout.WriteString(*m.Text)
			a.stream(sandbox.Stdout, *m.Text)
		}
	case typeStderr:
		if m.Text != nil {
			a.stderr.WriteString(*m.Text)
			a.stream(sandbox.Stderr, *m.Text)
		}
	case typeResult:
		a.addResult(m)
	case typeError:
		// Like the SDKs, the last error wins.
		a.err = &sandbox.ExecError{
			Name:      a.cap(m.Name),
			Value:     a.cap(m.Value),
			Traceback: a.cap(m.Traceback),
		}
	}
	// number_of_executions, keepalive and unknown types carry nothing we keep.
}

// stream hands printed text to the Output, if any, within what the
// execution keeps of that stream.
func (a *accumulator) stream(name, text string) {
	if a.out != nil && text != "" {
		a.out(name, textcap.Bytes(text, sandbox.MaxStreamBytes))
	}
}

func (a *accumulator) addResult(m *streamLine) {
	var text string
	switch {
	case m.Text != nil:
		text = *m.Text
	default:
		f := m.formats()
		if len(f) == 0 {
			return // an empty result (e.g. only "extra": {}) says nothing
		}
		text = "[" + strings.Join(f, ", ") + " output not shown]"
	}
	if len(a.results) >= maxResults || a.resultBytes >= sandbox.MaxStreamBytes {
		a.truncated = true
		return
	}
	if room := sandbox.MaxStreamBytes - a.resultBytes; len(text) > room {
		text = sandbox.Cut(text, room)
		a.truncated = true
	}
	a.resultBytes += len(text)
	a.results = append(a.results, text)
}

func (a *accumulator) cap(s string) string {
	if len(s) <= sandbox.MaxStreamBytes {
		return s
	}
	a.truncated = true
	return sandbox.Cut(s, sandbox.MaxStreamBytes)
}

func (a *accumulator) execution() sandbox.Execution {
	return sandbox.Execution{
		Stdout:    a.stdout.String(),
		Stderr:    a.stderr.String(),
		Results:   a.results,
		Error:     a.err,
		Truncated: a.truncated || a.stdout.Truncated() || a.stderr.Truncated(),
	}
}
