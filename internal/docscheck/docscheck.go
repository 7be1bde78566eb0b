// Package docscheck keeps the repository's Markdown honest cheaply: every
// relative link points at a file that exists and, into a Markdown file,
// at a heading it has (GitHub's anchor rules). Its test runs them over
// README.md, DEVELOPERS.md and docs/*.md, and bounds the README's length.
//
// Hand-written rather than a Markdown library: the checks need only
// fenced blocks, code spans, link targets and ATX headings, and the
// anchors must follow GitHub's slugs, which no parser in go.mod computes.
package docscheck

import (
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"unicode"
)

// Link is one link target found in a Markdown file.
type Link struct {
	Line   int    // 1-based
	Target string // as written: path, path#anchor or #anchor
}

var (
	// inlineLink matches the target of [text](target) and
	// [text](target "title"), after code spans are blanked.
	inlineLink = regexp.MustCompile(`\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)`)
	// refDef matches a reference definition: [id]: target
	refDef = regexp.MustCompile(`^\s{0,3}\[[^\]]+\]:\s+<?(\S+?)>?(?:\s|$)`)
	// atxHeading matches "# Title" to "###### Title".
	atxHeading = regexp.MustCompile(`^\s{0,3}(#{1,6})\s+(.*?)\s*#*\s*$`)
	// scheme marks an absolute URL (https:, mailto:, …), not checked.
	scheme = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9+.-]*:`)
	// mdLink and htmlTag reduce a heading's Markdown to its text.
	mdLink  = regexp.MustCompile(`!?\[([^\]]*)\]\([^)]*\)`)
	htmlTag = regexp.MustCompile(`<[^>]+>`)
	// underscoreEm is _emphasis_ or __strong__ (not snake_case: the
	// underscores must stand at the edges of words).
	underscoreEm = regexp.MustCompile(`(^|[^\p{L}\p{N}_])(_{1,2})([^_\s](?:[^_]*[^_\s])?)_{1,2}([^\p{L}\p{N}_]|$)`)
)

// prose returns the text's lines outside fenced code blocks, as written,
// each with its 1-based number.
func prose(text string) (out []string, nums []int) {
	fence := ""
	for i, line := range strings.Split(text, "\n") {
		trimmed := strings.TrimLeft(line, " ")
		if fence != "" {
			if strings.HasPrefix(trimmed, fence) && strings.Trim(trimmed, fence[:1]+" ") == "" {
				fence = ""
			}
			continue
		}
		if f := fenceOpen(trimmed); f != "" {
			fence = f
			continue
		}
		out = append(out, line)
		nums = append(nums, i+1)
	}
	return out, nums
}

// fenceOpen returns the fence a line opens (``` or ~~~, three or more),
// or "".
func fenceOpen(s string) string {
	for _, c := range []string{"`", "~"} {
		n := len(s) - len(strings.TrimLeft(s, c))
		if n >= 3 {
			return strings.Repeat(c, n)
		}
	}
	return ""
}

// blankCodeSpans replaces the content of each code span with spaces, so
// that brackets inside code are not read as links.
func blankCodeSpans(s string) string {
	b := []byte(s)
	ticks := func(i int) int {
		n := 0
		for i+n < len(b) && b[i+n] == '`' {
			n++
		}
		return n
	}
	for i := 0; i < len(b); {
		n := ticks(i)
		if n == 0 {
			i++
			continue
		}
		// A span closes at the next run of exactly as many backticks.
		end := -1
		for j := i + n; j < len(b); {
			m := ticks(j)
			if m == n {
				end = j
				break
			}
			j += max(m, 1)
		}
		if end < 0 {
			i += n
			continue
		}
		for k := i + n; k < end; k++ {
			b[k] = ' '
		}
		i = end + n
	}
	return string(b)
}

// Links returns every link target of a Markdown text outside code.
func Links(text string) []Link {
	var out []Link
	ls, nums := prose(text)
	for i, line := range ls {
		line = blankCodeSpans(line)
		for _, m := range inlineLink.FindAllStringSubmatch(line, -1) {
			out = append(out, Link{Line: nums[i], Target: m[1]})
		}
		if m := refDef.FindStringSubmatch(line); m != nil {
			out = append(out, Link{Line: nums[i], Target: m[1]})
		}
	}
	return out
}

// Anchors returns the anchors GitHub gives a Markdown text's headings.
func Anchors(text string) map[string]bool {
	anchors := map[string]bool{}
	seen := map[string]int{}
	// Code spans are kept: their text is part of the slug.
	ls, _ := prose(text)
	for _, line := range ls {
		m := atxHeading.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		slug := Slug(m[2])
		if n := seen[slug]; n > 0 {
			anchors[fmt.Sprintf("%s-%d", slug, n)] = true
		} else {
			anchors[slug] = true
		}
		seen[slug]++
	}
	return anchors
}

// Slug is GitHub's anchor for a heading's Markdown: its text lowercased,
// every character but letters, marks, digits, '_', '-' and spaces
// dropped, each space a '-' (github-slugger). Duplicates get -1, -2, …
// in Anchors.
func Slug(heading string) string {
	text := mdLink.ReplaceAllString(heading, "$1")
	text = htmlTag.ReplaceAllString(text, "")
	for {
		next := underscoreEm.ReplaceAllString(text, "$1$3$4")
		if next == text {
			break
		}
		text = next
	}
	var b strings.Builder
	for _, r := range strings.ToLower(text) {
		switch {
		case r == ' ':
			b.WriteByte('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.Is(unicode.M, r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

// CheckLinks checks every relative link of the Markdown file at path
// (relative to root): its file or folder exists inside root and, for an
// anchor into a Markdown file, the heading exists. It returns one message
// per broken link.
func CheckLinks(root, path string) ([]string, error) {
	src, err := os.ReadFile(filepath.Join(root, path))
	if err != nil {
		return nil, err
	}
	var problems []string
	for _, l := range Links(string(src)) {
		if scheme.MatchString(l.Target) || strings.HasPrefix(l.Target, "//") {
			continue
		}
		rawPath, anchor, _ := strings.Cut(l.Target, "#")
		p, err := url.PathUnescape(rawPath)
		if err != nil {
			problems = append(problems, fmt.Sprintf("%s:%d: %s: %v", path, l.Line, l.Target, err))
			continue
		}
		target := path
		if p != "" {
			if strings.HasPrefix(p, "/") {
				target = filepath.Clean(strings.TrimPrefix(p, "/"))
			} else {
				target = filepath.Join(filepath.Dir(path), p)
			}
		}
		if target == ".." || strings.HasPrefix(target, "../") {
			problems = append(problems, fmt.Sprintf("%s:%d: %s leaves the repository", path, l.Line, l.Target))
			continue
		}
		info, err := os.Stat(filepath.Join(root, target))
		if err != nil {
			problems = append(problems, fmt.Sprintf("%s:%d: %s: no such file %s", path, l.Line, l.Target, target))
			continue
		}
		if anchor == "" || info.IsDir() || !strings.EqualFold(filepath.Ext(target), ".md") {
			continue
		}
		md, err := os.ReadFile(filepath.Join(root, target))
		if err != nil {
			return nil, err
		}
		if !Anchors(string(md))[anchor] {
			problems = append(problems, fmt.Sprintf("%s:%d: %s: %s has no heading #%s", path, l.Line, l.Target, target, anchor))
		}
	}
	return problems, nil
}
