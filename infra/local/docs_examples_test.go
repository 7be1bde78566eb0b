package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// docBlock is a shell example of the docs.
type docBlock struct {
	file string
	line int
	code string
}

// localExamples are the ```sh blocks of the README and docs/*.md that
// call the local stack (they name http://127.0.0.1:8080).
func localExamples(t *testing.T, root string) []docBlock {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	files = append([]string{filepath.Join(root, "README.md")}, files...)
	fence := regexp.MustCompile("(?s)\n```sh\n(.*?)\n```")
	var out []docBlock
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range fence.FindAllSubmatchIndex(b, -1) {
			code := string(b[m[2]:m[3]])
			if !strings.Contains(code, "http://127.0.0.1:8080") {
				continue
			}
			rel, _ := filepath.Rel(root, f)
			out = append(out, docBlock{file: rel, line: strings.Count(string(b[:m[0]]), "\n") + 2, code: code})
		}
	}
	return out
}

// Issue 23: every example in the docs that calls the local stack runs as
// pasted against `make run`, on the port it prints: each block runs in
// bash from the repository's root (set -e: any failing command fails
// it), with every curl failing on an HTTP error, and the stack's URL put
// where the docs say 127.0.0.1:8080. Only printable ASCII, so no
// ellipsis or typographic quote slips into a header.
func TestDocsExamplesRunAgainstTheLocalStack(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("no bash")
	}
	if _, err := exec.LookPath("curl"); err != nil {
		t.Skip("no curl")
	}
	root, _ := filepath.Abs(filepath.Join("..", ".."))
	blocks := localExamples(t, root)
	if len(blocks) < 3 {
		t.Fatalf("found %d examples that call the local stack; the README and docs/api.md have some", len(blocks))
	}
	s := startLocal(t, nil)
	// A file's blocks run in one shell, in order, as a reader pastes them
	// into one terminal (the README's second block uses the first's TOKEN).
	var files []string
	script := map[string]string{}
	for _, b := range blocks {
		for i, r := range b.code {
			if r > '~' || (r < ' ' && r != '\n' && r != '\t') {
				t.Errorf("%s:%d: %q at byte %d is not printable ASCII", b.file, b.line, r, i)
			}
		}
		if _, ok := script[b.file]; !ok {
			files = append(files, b.file)
			script[b.file] = "set -euo pipefail\ncurl() { command curl --fail-with-body --max-time 60 \"$@\"; }\n"
		}
		script[b.file] += fmt.Sprintf("echo '--- %s:%d'\n%s\necho\n", b.file, b.line, strings.ReplaceAll(b.code, "http://127.0.0.1:8080", s.base))
	}
	for _, f := range files {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		cmd := exec.CommandContext(ctx, bash, "-c", script[f])
		cmd.Dir = root
		out, err := cmd.CombinedOutput()
		cancel()
		if err != nil {
			t.Errorf("%s: an example fails as pasted (%v); the output, each block headed by its line:\n%s", f, err, out)
			continue
		}
		t.Logf("%s ran:\n%s", f, out)
	}
}
