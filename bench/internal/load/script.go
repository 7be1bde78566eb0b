package load

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/commonly/runtime/bench/internal/script"
	"github.com/commonly/runtime/shared/llm/llmtest"
	"github.com/commonly/runtime/shared/sandbox/e2b/e2btest"
	"github.com/commonly/runtime/shared/tools/runcode"
)

// Kind is what a turn does when nothing fails.
type Kind string

const (
	// Plain calls the no-op tool once, then answers.
	Plain Kind = "plain"
	// Code runs code in an E2B sandbox (created on first use), then answers.
	Code Kind = "code"
	// Spend is a plain turn whose model calls report many tokens: the
	// users who cross the spend alarm and the cap make these.
	Spend Kind = "spend"
)

// Fault is what goes wrong in a turn; "" is nothing.
type Fault string

const (
	None Fault = ""
	// ModelFailsFirst: the first model call answers 500 (no model output:
	// an infrastructure failure refunded by the rule).
	ModelFailsFirst Fault = "model-fails-first"
	// ModelFailsLater: the second model call answers 500, after the first
	// answered (paid for, not refunded).
	ModelFailsLater Fault = "model-fails-later"
	// ModelHangs: the first model call hangs past LLM_TIMEOUT.
	ModelHangs Fault = "model-hangs"
	// NoUsage: the model answers without a usage object.
	NoUsage Fault = "no-usage"
	// SandboxRefused: E2B refuses the turn's sandbox for capacity.
	SandboxRefused Fault = "sandbox-refused"
	// SandboxVanishes: the sandbox dies in the middle of the execution.
	SandboxVanishes Fault = "sandbox-vanishes"
	// WorkerAbandons: after its code ran, the worker stops (as a Lambda
	// killed mid-turn): the run stays open, its sandbox alive, until the
	// reaper closes and kills them.
	WorkerAbandons Fault = "worker-abandons"
	// ClientDisconnects: the client goes away while the turn runs (slow
	// code), then asks again with the same Idempotency-Key.
	ClientDisconnects Fault = "client-disconnects"
	// WorkerKilled: the worker's invocation dies mid-turn (kill.go); the
	// next attempt takes the run over and resumes it.
	WorkerKilled Fault = "worker-killed"
	// AnswersCut: half the DynamoDB answers of the turn's worker are lost
	// after the write was applied (kill.go); the SDK retries each.
	AnswersCut Fault = "answers-cut"
)

// Turn faults in the order they are reported.
var turnFaults = []Fault{ModelFailsFirst, ModelFailsLater, ModelHangs, NoUsage, SandboxRefused, SandboxVanishes, WorkerAbandons, ClientDisconnects, WorkerKilled, AnswersCut}

// Stall is the tool an abandoning turn calls: it never returns while the
// run lasts (the worker is gone), and is released at the end.
const Stall = "load_stall"

// directive is what a turn's message tells the scripted model and the
// fake E2B: the message carries it, so that every request of a turn, in
// any order and on any retry, gets the same script.
type directive struct {
	Kind  Kind
	Fault Fault
	// Turn is the planned turn's user and number ("user/n"): one run.
	Turn string
}

const directivePrefix = "load-turn "

func (d directive) message(user string, n int) string {
	m := fmt.Sprintf("%skind=%s fault=%s user=%s n=%d", directivePrefix, d.Kind, d.Fault, user, n)
	if d.Kind == Spend {
		// A provider bills at most a token a byte of what a request
		// carries: an expensive turn carries a long prompt.
		m += " pad=" + strings.Repeat("x", spendPadBytes)
	}
	return m
}

// turnID names a planned turn: its user and number.
func turnID(user string, n any) string { return fmt.Sprintf("%s/%v", user, n) }

// spendPadBytes pads a spend turn's message, under the API's 16,000
// characters.
const spendPadBytes = 14_000

func parseDirective(text string) (directive, bool) {
	rest, ok := strings.CutPrefix(text, directivePrefix)
	if !ok {
		return directive{}, false
	}
	var d directive
	var user, n string
	for _, f := range strings.Fields(rest) {
		k, v, _ := strings.Cut(f, "=")
		switch k {
		case "kind":
			d.Kind = Kind(v)
		case "fault":
			d.Fault = Fault(v)
		case "user":
			user = v
		case "n":
			n = v
		}
	}
	d.Turn = turnID(user, n)
	return d, d.Kind != ""
}

// Spend turns' usage a model call, at most: about 2 US cents a turn at
// peak prices. spendUsage bills what the request allows, as a provider
// does: no more prompt tokens than the request's text has bytes (a
// byte-level tokenizer's tokens each cover a byte or more) and no more
// output than its max_tokens (which the spend cap sizes).
var spendUsage = llmtest.Usage{Shape: llmtest.OpenAIShape, Prompt: 20_000, Completion: 2_000}

func spendUsageOf(req llmtest.ChatRequest) llmtest.Usage {
	u := spendUsage
	var text int64
	for _, m := range req.Messages {
		text += int64(len(m.Text()))
	}
	u.Prompt = min(u.Prompt, text)
	if req.MaxTokens != nil {
		u.Completion = min(u.Completion, *req.MaxTokens)
	}
	return u
}

// respond is the scripted model: the step a request calls for, from its
// turn's directive and the tool results it carries.
func respond(req llmtest.ChatRequest) llmtest.Step {
	d, tools, _ := conversation(req)
	if d.Kind == "" {
		return llmtest.Text("no directive")
	}
	switch {
	case d.Fault == ModelFailsFirst && tools == 0, d.Fault == ModelFailsLater && tools == 1:
		return llmtest.ServerError(http.StatusInternalServerError)
	case d.Fault == ModelHangs && tools == 0:
		return llmtest.Hang()
	}
	var step llmtest.Step
	switch {
	case tools == 0 && (d.Kind == Code || d.Fault == WorkerAbandons || d.Fault == ClientDisconnects || d.Fault == SandboxVanishes || d.Fault == SandboxRefused):
		step = llmtest.Calls(llmtest.Call(runcode.Name, codeArgs(d.Fault)))
	case tools == 1 && d.Fault == WorkerAbandons:
		step = llmtest.Calls(llmtest.Call(Stall, `{}`))
	case tools == 0:
		step = llmtest.Calls(llmtest.Call(script.Tool, `{"step":1}`))
	default:
		step = llmtest.Text(script.Final)
	}
	if d.Kind == Spend {
		step = step.WithUsage(spendUsageOf(req))
	}
	if d.Fault == NoUsage {
		step = step.WithUsage(llmtest.Usage{Shape: llmtest.NoUsage})
	}
	return step
}

// conversation reads a request: its turn's directive, and how many tool
// results and model answers it carries.
func conversation(req llmtest.ChatRequest) (d directive, tools, answers int) {
	for _, m := range req.Messages {
		switch m.Role {
		case "user":
			var text string
			if json.Unmarshal(m.Content, &text) == nil {
				if got, ok := parseDirective(text); ok {
					d = got
				}
			}
		case "tool":
			tools++
		case "assistant":
			answers++
		}
	}
	return d, tools, answers
}

func codeArgs(f Fault) string {
	b, _ := json.Marshal(map[string]string{"language": "python", "code": "# " + string(f) + "\nprint(6 * 7)"})
	return string(b)
}

// slowCode is how long a disconnecting client's code runs: the client
// goes away before it ends.
const slowCode = 800 * time.Millisecond

// execute plays the fake E2B's executions: the answer, after a wait for
// a disconnecting client's code; the sandbox killed mid-stream for a
// vanishing one.
func execute(_, _, code string, w *e2btest.StreamWriter) {
	switch {
	case strings.Contains(code, string(SandboxVanishes)):
		w.Stdout("partial\n")
		w.KillSandbox()
		return
	case strings.Contains(code, string(ClientDisconnects)):
		if !w.Sleep(slowCode) {
			return
		}
	}
	w.Stdout("42\n")
}
