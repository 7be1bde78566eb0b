package awscalls

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Symbolic names each table and resource of calls by the environment
// variable the function read it from ("$STATE_TABLE" for the table the
// test's STATE_TABLE named), so a recording says what the code calls
// whatever the test named it, and the IAM test resolves each variable
// through the function's environment in the synthesized template. vars is
// the function's environment in the test; a value no variable holds is
// left as it is (an index name, a literal).
func Symbolic(calls []Call, vars map[string]string) []Call {
	byValue := map[string]string{}
	for k, v := range vars {
		if v != "" {
			if prev, ok := byValue[v]; !ok || k < prev {
				byValue[v] = k // the first name, sorted, when two share a value
			}
		}
	}
	sym := func(v string) string {
		if k, ok := byValue[v]; ok {
			return "$" + k
		}
		return v
	}
	out := make([]Call, len(calls))
	for i, c := range calls {
		c.Table = sym(c.Table)
		if c.Resource != "" {
			parts := strings.Split(c.Resource, ",")
			for j, p := range parts {
				parts[j] = sym(p)
			}
			c.Resource = strings.Join(parts, ",")
		}
		items := make([]Item, len(c.Items))
		for j, it := range c.Items {
			it.Table = sym(it.Table)
			items[j] = it
		}
		c.Items = items
		out[i] = c.normalize()
	}
	return out
}

// CheckFile keeps a recording true: with update it writes the distinct
// calls to path (indented JSON, one call a line); without, it returns an
// error unless path holds exactly those calls.
func CheckFile(path string, calls []Call, update bool) error {
	want := Encode(Distinct(calls))
	if update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return err
		}
		return os.WriteFile(path, want, 0o644)
	}
	got, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("%w (run the tests with -update to write it)", err)
	}
	if !bytes.Equal(got, want) {
		return fmt.Errorf("%s is not what the tests recorded (run them with -update and review the diff); recorded:\n%s", path, want)
	}
	return nil
}

// Encode is a recording's form: a JSON array, one call a line.
func Encode(calls []Call) []byte {
	var b bytes.Buffer
	b.WriteString("[\n")
	for i, c := range calls {
		line, _ := json.Marshal(c)
		b.WriteString("  ")
		b.Write(line)
		if i < len(calls)-1 {
			b.WriteByte(',')
		}
		b.WriteByte('\n')
	}
	b.WriteString("]\n")
	return b.Bytes()
}

// ReadFile reads a recording.
func ReadFile(path string) ([]Call, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var calls []Call
	if err := json.Unmarshal(b, &calls); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return calls, nil
}
