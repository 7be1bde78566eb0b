package docscheck

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// readmeMaxLines bounds the README: the way in, not the manual (the rest
// is in docs/).
const readmeMaxLines = 200

// firstScreen is how many of the README's lines a reader sees first; the
// two commands must be among them.
const firstScreen = 25

// repoRoot is the repository's root, two folders up from this package.
func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatalf("no go.mod at %s: %v", root, err)
	}
	return root
}

// markdownFiles are the files whose links are checked: the README,
// DEVELOPERS.md and every file in docs/.
func markdownFiles(t *testing.T, root string) []string {
	t.Helper()
	docs, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	if len(docs) == 0 {
		t.Fatal("docs/ holds no Markdown file")
	}
	files := []string{"README.md", "DEVELOPERS.md"}
	for _, d := range docs {
		rel, err := filepath.Rel(root, d)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, filepath.ToSlash(rel))
	}
	return files
}

func TestReadmeIsShortWithTheTwoCommandsFirst(t *testing.T) {
	src, err := os.ReadFile(filepath.Join(repoRoot(t), "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimRight(string(src), "\n"), "\n")
	if len(lines) > readmeMaxLines {
		t.Errorf("README.md has %d lines, more than %d: move the detail to docs/", len(lines), readmeMaxLines)
	}
	first := strings.Join(lines[:min(firstScreen, len(lines))], "\n")
	for _, cmd := range []string{"make run", "make test"} {
		if !strings.Contains(first, cmd) {
			t.Errorf("README.md's first %d lines do not show %q", firstScreen, cmd)
		}
	}
}

func TestRelativeLinksResolve(t *testing.T) {
	root := repoRoot(t)
	for _, f := range markdownFiles(t, root) {
		problems, err := CheckLinks(root, f)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range problems {
			t.Error(p)
		}
	}
}

// TestDocsIndexListsEveryFile: docs/README.md links every file in docs/.
func TestDocsIndexListsEveryFile(t *testing.T) {
	root := repoRoot(t)
	index, err := os.ReadFile(filepath.Join(root, "docs", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	var linked []string
	for _, l := range Links(string(index)) {
		p, _, _ := strings.Cut(l.Target, "#")
		linked = append(linked, p)
	}
	for _, f := range markdownFiles(t, root) {
		name, ok := strings.CutPrefix(f, "docs/")
		if !ok || name == "README.md" {
			continue
		}
		if !slices.Contains(linked, name) {
			t.Errorf("docs/README.md does not link %s", name)
		}
	}
}

// TestCheckLinksFindsBrokenOnes: the checker itself, on a tree made here.
func TestCheckLinksFindsBrokenOnes(t *testing.T) {
	root := t.TempDir()
	write := func(name, text string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(filepath.Join(root, name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("docs/a.md", "# A\n\n## The API's input\n\n## Tests\n\n## Tests\n")
	write("shared/x.go", "package x\n")
	write("README.md", strings.Join([]string{
		"# Top",
		"[ok](docs/a.md) [ok](docs/a.md#the-apis-input) [ok](docs/a.md#tests-1) [ok](#top)",
		"[ok](shared/) [ok](shared/x.go#L1) [ok](https://example.com/missing) [ok](<docs/a.md>)",
		"[ok, titled](docs/a.md \"A\")",
		"`[in code](missing.md)` and ``a ` and [in code](missing.md)``",
		"```sh",
		"[in a fence](missing.md)",
		"```",
		"[missing file](docs/b.md)",
		"[missing heading](docs/a.md#the-api-input)",
		"[missing here](#nowhere)",
		"[outside](../x.md)",
		"[ref]: docs/c.md",
	}, "\n"))
	problems, err := CheckLinks(root, "README.md")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"docs/b.md", "docs/a.md#the-api-input", "#nowhere", "../x.md", "docs/c.md"}
	if len(problems) != len(want) {
		t.Fatalf("problems %q, want one for each of %q", problems, want)
	}
	for i, w := range want {
		if !strings.Contains(problems[i], w) {
			t.Errorf("problem %d is %q, want one about %s", i, problems[i], w)
		}
	}
}

// TestSlug: GitHub's anchors for headings of the kinds the docs use.
func TestSlug(t *testing.T) {
	for heading, want := range map[string]string{
		"The API's input":                            "the-apis-input",
		"A turn, from request to ledger":             "a-turn-from-request-to-ledger",
		"`make run`: the local stack":                "make-run-the-local-stack",
		"A turn with 10,000 runs stored":             "a-turn-with-10000-runs-stored",
		"Spend cap (opt-in)":                         "spend-cap-opt-in",
		"The ledger: each user's cost per UTC day":   "the-ledger-each-users-cost-per-utc-day",
		"Where things live":                          "where-things-live",
		"snake_case and → arrows":                    "snake_case-and--arrows",
		"A [linked](x.md) word":                      "a-linked-word",
		"Émile's café":                               "émiles-café",
		"TurnErrors":                                 "turnerrors",
		"__init__ and __x__ and a_b":                 "init-and-x-and-a_b",
		"Configuration (reaper function)":            "configuration-reaper-function",
		"Alarms, and what to do when each fires":     "alarms-and-what-to-do-when-each-fires",
		"**Bold** and _emphasis_":                    "bold-and-emphasis",
		"`functions/turn/handler`, `shared/keys`":    "functionsturnhandler-sharedkeys",
		"Benchmarks ≥ 10× less":                      "benchmarks--10-less",
		"The reaper: sandboxes past their lifetime":  "the-reaper-sandboxes-past-their-lifetime",
		"Local: the local stack, the tests and more": "local-the-local-stack-the-tests-and-more",
	} {
		if got := Slug(heading); got != want {
			t.Errorf("Slug(%q) = %q, want %q", heading, got, want)
		}
	}
	anchors := Anchors("# Tests\n\n```\n# not a heading\n```\n\n## Tests\n### Tests ###\n")
	for _, a := range []string{"tests", "tests-1", "tests-2"} {
		if !anchors[a] {
			t.Errorf("no anchor %q in %v", a, anchors)
		}
	}
	if anchors["not-a-heading"] {
		t.Error("a line in a fenced block was taken for a heading")
	}
}
