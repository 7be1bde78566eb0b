package e2btest

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/commonly/runtime/shared/sandbox/e2b"
)

// sandboxHost serves the code interpreter of sandbox id behind the proxy.
func (f *Fake) sandboxHost(w http.ResponseWriter, r *http.Request, id string) {
	f.mu.Lock()
	f.sweep()
	s, ok := f.sandboxes[id]
	var (
		envdToken, trafficToken string
		secure, hasTraffic      bool
		dead                    chan struct{}
	)
	if ok {
		envdToken, secure, dead = s.envdToken, s.secure, s.dead
		if s.trafficToken != nil {
			trafficToken, hasTraffic = *s.trafficToken, true
		}
	}
	f.mu.Unlock()
	if !ok || r.Header.Get("E2b-Sandbox-Port") != e2b.InterpreterPort {
		// What the edge proxy answers for a sandbox (or port) that is gone.
		writeJSON(w, http.StatusBadGateway, map[string]any{
			"code": http.StatusBadGateway, "message": "The sandbox was not found", "sandboxId": id,
		})
		return
	}
	if hasTraffic && r.Header.Get("E2B-Traffic-Access-Token") != trafficToken {
		http.Error(w, "missing or invalid traffic access token", http.StatusForbidden)
		return
	}
	if secure && r.Header.Get("X-Access-Token") != envdToken {
		http.Error(w, "unauthorized", http.StatusUnauthorized)
		return
	}
	if r.Method != http.MethodPost || r.URL.Path != "/execute" {
		http.NotFound(w, r)
		return
	}
	f.execute(w, r, id, dead)
}

func (f *Fake) execute(w http.ResponseWriter, r *http.Request, id string, dead chan struct{}) {
	raw, _ := io.ReadAll(io.LimitReader(r.Body, maxBody))
	call := ExecuteCall{SandboxID: id, Header: r.Header.Clone(), Status: http.StatusOK}
	_ = json.Unmarshal(raw, &call.Body)
	code, ok := call.Body["code"].(string)
	if !ok {
		// The interpreter's FastAPI model wants a string.
		call.Status = http.StatusUnprocessableEntity
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(call.Status)
		_, _ = io.WriteString(w, `{"detail":[{"type":"string_type","loc":["body","code"],"msg":"Input should be a valid string"}]}`)
	}
	lang, _ := call.Body["language"].(string)
	if lang == "" {
		lang = "python" // the interpreter's default context
	}
	call.Code, call.Language = code, lang
	f.mu.Lock()
	f.executions = append(f.executions, call)
	var count int
	if s, ok := f.sandboxes[id]; ok && call.Status == http.StatusOK {
		s.executions++
		count = s.executions
	}
	play, now := f.onExecute, f.now
	f.mu.Unlock()
	if call.Status != http.StatusOK {
		return
	}

	w.WriteHeader(http.StatusOK)
	sw := &StreamWriter{
		w: w, ctx: r.Context(), dead: dead, stop: f.stop, now: now,
		interrupted: func() { f.recordInterrupt(id) },
		kill:        func() { f.Vanish(id) },
	}
	sw.send(pyJSON("type", "number_of_executions", "execution_count", count))
	if play != nil && !sw.over() {
		play(id, call.Language, call.Code, sw)
	}
	switch {
	case sw.killed:
		// The machine is gone: the connection drops mid-stream.
		panic(http.ErrAbortHandler)
	case sw.gone, sw.early:
		return
	}
	sw.send(pyJSON("type", "end_of_execution"))
}

func (f *Fake) recordInterrupt(id string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.interrupts = append(f.interrupts, id)
}

// StreamWriter writes one execution's NDJSON stream, the way the code
// interpreter does (Python json.dumps spacing, ASCII only). Its methods
// return false once the stream is over (client gone, sandbox killed,
// stream ended early): the ExecuteFunc should then return.
type StreamWriter struct {
	w           http.ResponseWriter
	ctx         context.Context
	dead        <-chan struct{}
	stop        <-chan struct{}
	now         func() time.Time
	interrupted func()
	kill        func()

	gone   bool // the client went away; the kernel was interrupted
	killed bool // the sandbox died mid-stream
	early  bool // ended without end_of_execution
}

// Stdout streams printed text.
func (s *StreamWriter) Stdout(text string) bool {
	return s.send(pyJSON("type", "stdout", "text", text, "timestamp", s.timestamp()))
}

// Stderr streams text written to stderr.
func (s *StreamWriter) Stderr(text string) bool {
	return s.send(pyJSON("type", "stderr", "text", text, "timestamp", s.timestamp()))
}

// Result streams a main result with a text/plain form.
func (s *StreamWriter) Result(text string) bool {
	return s.send(pyJSON("type", "result", "text", text, "is_main_result", true, "extra", map[string]any{}))
}

// Error streams an exception raised by the code.
func (s *StreamWriter) Error(name, value, traceback string) bool {
	return s.send(pyJSON("type", "error", "name", name, "value", value, "traceback", traceback))
}

// Keepalive streams the line the interpreter sends after 5 s of silence.
func (s *StreamWriter) Keepalive() bool { return s.send(pyJSON("type", "keepalive")) }

// Raw streams one line as given (unknown types, malformed lines).
func (s *StreamWriter) Raw(line string) bool { return s.send(line) }

// Hang is code that never finishes: it returns once the stream is over,
// the client gone (the kernel is then interrupted), the sandbox killed or
// the fake closed.
func (s *StreamWriter) Hang() {
	select {
	case <-s.ctx.Done():
	case <-s.dead:
	case <-s.stop:
	}
	s.over()
}

// EndEarly ends the response without end_of_execution, as a cut
// connection between the proxy and the interpreter does.
func (s *StreamWriter) EndEarly() { s.early = true }

// KillSandbox makes the sandbox die now: it is removed, and this stream
// is dropped without end_of_execution.
func (s *StreamWriter) KillSandbox() {
	s.kill()
	s.killed = true
}

// over reports, and settles, whether the stream can go on.
func (s *StreamWriter) over() bool {
	if s.gone || s.killed || s.early {
		return true
	}
	select {
	case <-s.dead:
		s.killed = true
	case <-s.stop:
		s.killed = true
	case <-s.ctx.Done():
		s.markGone()
	default:
	}
	return s.gone || s.killed
}

func (s *StreamWriter) markGone() {
	if !s.gone {
		s.gone = true
		s.interrupted()
	}
}

func (s *StreamWriter) send(line string) bool {
	if s.over() {
		return false
	}
	if _, err := io.WriteString(s.w, line+"\n"); err != nil {
		s.markGone()
		return false
	}
	if err := http.NewResponseController(s.w).Flush(); err != nil {
		s.markGone()
		return false
	}
	return true
}

func (s *StreamWriter) timestamp() string {
	return s.now().UTC().Format("2006-01-02T15:04:05.000000-07:00")
}

// pyJSON renders key/value pairs in order the way Python's json.dumps
// does by default: ", " and ": " separators and \u escapes for non-ASCII.
func pyJSON(kv ...any) string {
	var b strings.Builder
	b.WriteByte('{')
	for i := 0; i+1 < len(kv); i += 2 {
		if i > 0 {
			b.WriteString(", ")
		}
		k, _ := json.Marshal(kv[i])
		v, err := json.Marshal(kv[i+1])
		if err != nil {
			v = []byte("null")
		}
		b.WriteString(asciiJSON(k))
		b.WriteString(": ")
		b.WriteString(asciiJSON(v))
	}
	b.WriteByte('}')
	return b.String()
}

// asciiJSON escapes the non-ASCII runes of valid JSON text, which can
// only occur inside strings.
func asciiJSON(p []byte) string {
	var b strings.Builder
	for _, r := range string(p) {
		switch {
		case r < utf8.RuneSelf:
			b.WriteRune(r)
		case r > 0xFFFF:
			r -= 0x10000
			fmt.Fprintf(&b, `\u%04x\u%04x`, 0xD800+(r>>10), 0xDC00+(r&0x3FF))
		default:
			fmt.Fprintf(&b, `\u%04x`, r)
		}
	}
	return b.String()
}

// Sleep is code that runs for d: it returns true after d, or false as
// soon as the stream is over (client gone, sandbox killed, fake closed).
func (s *StreamWriter) Sleep(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return !s.over()
	case <-s.ctx.Done():
	case <-s.dead:
	case <-s.stop:
	}
	s.over()
	return false
}
