package runcode

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/commonly/runtime/shared/sandbox"
	"github.com/commonly/runtime/shared/textcap"
)

// Output is what a run returns to the model (as {"ok":true,...Output}).
// An exception raised by the code is a successful call: the model reads
// it and fixes its code.
type Output struct {
	Stdout    string     `json:"stdout"`
	Stderr    string     `json:"stderr,omitempty"`
	Results   []string   `json:"results,omitempty"`
	Exception *Exception `json:"exception,omitempty"`
	// RunsLeft tells the model how many runs the turn still allows.
	RunsLeft int `json:"runsLeft"`
	// Note tells the model what it must know beside the output: the
	// sandbox was restarted and earlier files are gone.
	Note string `json:"note,omitempty"`
}

// Exception is an error raised by the code.
type Exception struct {
	Name      string `json:"name"`
	Value     string `json:"value"`
	Traceback string `json:"traceback,omitempty"`
}

// shape bounds each part of an execution to MaxOutputChars.
func (t *Tool) shape(e sandbox.Execution, runsLeft int) Output {
	n := t.cfg.MaxOutputChars
	out := Output{
		Stdout:   clip(e.Stdout, n),
		Stderr:   clip(stripANSI(e.Stderr), n),
		Results:  clipAll(e.Results, n),
		RunsLeft: runsLeft,
	}
	if e.Error != nil {
		out.Exception = &Exception{
			Name:      clip(e.Error.Name, 200),
			Value:     clip(stripANSI(e.Error.Value), n),
			Traceback: clip(stripANSI(e.Error.Traceback), n),
		}
	}
	return out
}

// clip bounds s to about limit characters, keeping its head and its tail
// (where tracebacks and final results are) around a note of what was cut.
func clip(s string, limit int) string {
	total := textcap.Len(s)
	if total <= limit {
		return s
	}
	head := limit * 2 / 3
	tail := limit - head
	cut := total - head - tail
	runes := []rune(s)
	return string(runes[:head]) + fmt.Sprintf("\n…[%d characters truncated]…\n", cut) + string(runes[total-tail:])
}

// clipAll bounds a list of results to limit characters in all.
func clipAll(results []string, limit int) []string {
	var out []string
	left := limit
	for i, r := range results {
		if left <= 0 {
			out = append(out, fmt.Sprintf("…[%d more results truncated]", len(results)-i))
			break
		}
		c := clip(r, left)
		out = append(out, c)
		left -= textcap.Len(r)
	}
	return out
}

// ansi matches terminal escape sequences (IPython colours tracebacks):
// noise to the model.
var ansi = regexp.MustCompile(`\x1b\[[0-9;?]*[ -/]*[@-~]`)

func stripANSI(s string) string {
	if !strings.Contains(s, "\x1b") {
		return s
	}
	return ansi.ReplaceAllString(s, "")
}
