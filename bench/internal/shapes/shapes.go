// Package shapes is what users send, as turns of the production turn
// function on the stand-ins, for `make memsize` (bench/cmd/turnshapes) and
// the watched turn the scale model reads (bench/scale/watch.json): a bare
// answer, a turn that reads 2k to 50k tokens of context, one that runs
// code, one that searches the web, each ending in an answer of 500
// tokens streamed. The model is the scripted LiteLLM (llmtest), paced as
// a model streams (Pacer); the code runs on the fake E2B (e2btest,
// Execute); the search is the fake Exa (searchtest, Hits); the context
// is read through a tool of the benchmark's own (ContextTool), because
// the pod's context tool caps what it reads at 8,000 characters.
package shapes

import (
	"fmt"
	"strings"
)

// CharsPerToken is how many bytes of English text a token covers, the
// usual rule of thumb for BPE tokenizers: the shapes' sizes in tokens
// are their text's bytes over it.
const CharsPerToken = 4

// Shape is one kind of turn.
type Shape struct {
	Name string
	// ContextTokens is the context the turn reads (ContextTool) before it
	// answers; 0 reads none.
	ContextTokens int
	// Code runs a program in the sandbox before answering.
	Code bool
	// Search searches the web before answering.
	Search bool
	// AnswerTokens is the answer, streamed a token a chunk.
	AnswerTokens int
}

// All are the shapes, in the order of the tables.
var All = []Shape{
	{Name: "answer", AnswerTokens: 500},
	{Name: "context-2k", ContextTokens: 2_000, AnswerTokens: 500},
	{Name: "context-8k", ContextTokens: 8_000, AnswerTokens: 500},
	{Name: "context-32k", ContextTokens: 32_000, AnswerTokens: 500},
	// The loop stops a turn at 50,000 tokens over its calls
	// (agent.DefaultMaxTokens) before a call, not after: a turn can
	// reach a prompt of 50k once, in its last call.
	{Name: "context-50k", ContextTokens: 50_000, AnswerTokens: 500},
	{Name: "code", Code: true, AnswerTokens: 500},
	{Name: "search", Search: true, AnswerTokens: 500},
}

// ByName is the shape named name.
func ByName(name string) (Shape, bool) {
	for _, s := range All {
		if s.Name == name {
			return s, true
		}
	}
	return Shape{}, false
}

// Select is the shapes named in a comma-separated list; "" or "all" is
// every shape.
func Select(list string) ([]Shape, error) {
	if list == "" || list == "all" {
		return All, nil
	}
	var out []Shape
	for _, n := range strings.Split(list, ",") {
		s, ok := ByName(strings.TrimSpace(n))
		if !ok {
			return nil, fmt.Errorf("shapes: no shape %q (have %s)", n, names())
		}
		out = append(out, s)
	}
	return out, nil
}

func names() string {
	var n []string
	for _, s := range All {
		n = append(n, s.Name)
	}
	return strings.Join(n, ", ")
}

// Acts is whether the turn calls a tool before its answer.
func (s Shape) Acts() bool { return s.ContextTokens > 0 || s.Code || s.Search }

// Calls is the turn's model calls: one for the tool, if any, and the
// answer.
func (s Shape) Calls() int {
	if s.Acts() {
		return 2
	}
	return 1
}

// directive starts the user's message: the scripted model reads the
// shape from it.
const directive = "shape:"

// Message is the user's message of a turn of shape s: the directive and
// a question of about 300 tokens, as a user in a pod writes one.
func Message(s Shape) string {
	return directive + s.Name + "\n" + words(300)
}

// shapeOf reads the shape from a user's message.
func shapeOf(message string) (Shape, bool) {
	rest, ok := strings.CutPrefix(message, directive)
	if !ok {
		return Shape{}, false
	}
	name, _, _ := strings.Cut(rest, "\n")
	return ByName(name)
}

// vocabulary is the text the shapes are written in: ordinary words of a
// pod's conversation, so that the JSON the turn encodes escapes as
// little as real text does.
var vocabulary = strings.Fields(`the agent reads what people in the pod wrote about the release
plan and answers with a summary of open questions, who owns each task, which tests still fail,
and what the numbers from last week say about latency cost and errors; it quotes "short" lines
and keeps code like x = f(y) + 1 as it is`)

// words is n words of the vocabulary, each followed by a space (a model
// streams a token a chunk; llmtest splits after each space).
func words(n int) string {
	var b strings.Builder
	b.Grow(n * 6)
	for i := range n {
		b.WriteString(vocabulary[i%len(vocabulary)])
		b.WriteByte(' ')
	}
	return b.String()
}

// text is about tokens tokens of the vocabulary.
func text(tokens int) string {
	var b strings.Builder
	want := tokens * CharsPerToken
	for i := 0; b.Len() < want; i++ {
		b.WriteString(vocabulary[i%len(vocabulary)])
		b.WriteByte(' ')
	}
	return b.String()[:want]
}
