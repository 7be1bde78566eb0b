package offline

import "strings"

// codeBlock is the first runnable fenced block of a message.
type codeBlock struct {
	Language string // "python" or "javascript"
	Code     string
}

// fenceLanguages maps a fence's info string to the sandbox's language; a
// bare fence is Python, the sandbox's default.
var fenceLanguages = map[string]string{
	"":           "python",
	"python":     "python",
	"py":         "python",
	"js":         "javascript",
	"javascript": "javascript",
}

// findCodeBlock returns the first closed ``` block in a language the
// sandbox runs; blocks in other languages are skipped.
func findCodeBlock(text string) (codeBlock, bool) {
	lines := strings.Split(text, "\n")
	for i := 0; i < len(lines); i++ {
		info, ok := strings.CutPrefix(strings.TrimSpace(lines[i]), "```")
		if !ok {
			continue
		}
		end := i + 1
		for end < len(lines) && strings.TrimSpace(lines[end]) != "```" {
			end++
		}
		if end == len(lines) {
			return codeBlock{}, false // unclosed: nothing reliable to run
		}
		lang, known := fenceLanguages[strings.ToLower(strings.TrimSpace(info))]
		code := strings.Join(lines[i+1:end], "\n")
		if known && strings.TrimSpace(code) != "" {
			return codeBlock{Language: lang, Code: code}, true
		}
		i = end
	}
	return codeBlock{}, false
}

// findSearch returns the query of the first "search: ..." line.
func findSearch(text string) (string, bool) {
	for _, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		if len(line) < len("search:") || !strings.EqualFold(line[:len("search:")], "search:") {
			continue
		}
		if q := strings.TrimSpace(line[len("search:"):]); q != "" {
			return q, true
		}
	}
	return "", false
}

// quote bounds s to n runes for quoting back.
func quote(s string, n int) string {
	s = strings.TrimSpace(s)
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n]) + "…"
}
