package localstack

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"sync"
	"time"

	"github.com/commonly/runtime/infra/awslocal/rie"
	"github.com/commonly/runtime/shared/turns"
)

// Bootstrap is a function's bootstrap running under the Lambda Runtime
// Interface Emulator on the stack's stand-ins: one execution environment,
// which serves one invocation at a time, as Lambda's does.
type Bootstrap struct {
	fn   Function
	emu  *rie.Emulator
	home string
	mu   sync.Mutex // one invocation at a time
}

// Bootstrap runs fn's bootstrap (path) under the emulator
// (Config.Emulator) with exactly the stack's environment, env over it,
// and the stand-ins' endpoints: nothing of this process's own, as in a
// Lambda container. logs, when set, gets what the emulator and the
// function write. The turn's bootstrap also runs the turn function's
// asynchronous invocations of itself (make invoke). The stack stops it
// at Close.
func (st *Stack) Bootstrap(fn Function, path string, env map[string]string, logs io.Writer) (*Bootstrap, error) {
	if st.cfg.Emulator == "" {
		return nil, errors.New("a bootstrap needs the emulator (Config.Emulator)")
	}
	home, err := os.MkdirTemp("", "localstack-home-")
	if err != nil {
		return nil, err
	}
	vars := rie.Env(home, st.Env, env, st.Endpoints())
	emu, err := rie.Start(st.cfg.Emulator, path, vars, logs)
	if err != nil {
		_ = os.RemoveAll(home)
		return nil, err
	}
	b := &Bootstrap{fn: fn, emu: emu, home: home}
	st.mu.Lock()
	st.bootstraps = append(st.bootstraps, b)
	if fn == Turn && st.worker == nil {
		st.worker = b
	}
	st.mu.Unlock()
	return b, nil
}

// Emulator is the emulator the bootstrap runs under.
func (b *Bootstrap) Emulator() *rie.Emulator { return b.emu }

// Invoke sends one event and returns the function's answer. A function
// error (the error document the emulator answers with 200, a crash's
// Runtime.ExitError included) is returned as *FunctionError, with the
// document as the answer.
func (b *Bootstrap) Invoke(ctx context.Context, payload []byte) ([]byte, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	body, err := b.emu.Invoke(ctx, payload)
	// The emulator answers a function's error with 200 and a crash
	// (Runtime.ExitError) with 502, each with the error document, and a
	// timeout with 200 and a line of text (Lambda: Sandbox.Timedout).
	if bytes.HasPrefix(body, []byte("Task timed out")) {
		return body, &FunctionError{Type: "Sandbox.Timedout", Message: string(body)}
	}
	if doc, ok := rie.ErrorDocument(body); ok {
		return body, &FunctionError{Type: doc.Type, Message: doc.Message}
	}
	return body, err
}

// Kill ends the function's process with SIGKILL, as Lambda loses an
// execution environment; the emulator starts it again at the next
// invocation.
func (b *Bootstrap) Kill() error { return b.emu.KillFunction() }

func (b *Bootstrap) close() {
	_ = b.emu.Close()
	_ = os.RemoveAll(b.home)
}

// FunctionError is an invocation that failed in the function: an error
// it returned, a crash, a timeout.
type FunctionError struct{ Type, Message string }

func (e *FunctionError) Error() string { return e.Type + ": " + e.Message }

// invoker runs the turn function's asynchronous invocations in a
// process of its own: the worker's environment (Config.Worker) or the
// turn's bootstrap under the emulator (make invoke).
type invoker interface {
	Invoke(ctx context.Context, payload []byte) ([]byte, error)
	Kill() error
}

// KillWorker ends the process the turn's dispatches run in (Config.Worker,
// or the turn's bootstrap) with SIGKILL, mid-turn if a turn runs: the
// invocation fails (Runtime.ExitError) and the Lambda stand-in retries it
// in a new process.
func (st *Stack) KillWorker() error {
	st.mu.Lock()
	w := st.worker
	st.mu.Unlock()
	if w == nil {
		return errors.New("no worker process (Config.Worker)")
	}
	return w.Kill()
}

// Invocation is one attempt of an asynchronous invocation the Lambda
// stand-in ran in a bootstrap: its payload, and what the function
// answered.
type Invocation struct {
	Payload []byte
	Answer  []byte
	Err     error
	At      time.Time
}

// Invocations are the attempts of asynchronous invocations a bootstrap
// ran so far, in the order they ended.
func (st *Stack) Invocations() []Invocation {
	st.mu.Lock()
	defer st.mu.Unlock()
	return append([]Invocation(nil), st.invocations...)
}

// invokeAsync is one attempt of an asynchronous invocation of the turn
// function, run by the Lambda stand-in in an invocation of its own: in
// its bootstrap when one runs (the worker process, make invoke's), in
// this process otherwise, with the function's timeout. An error fails
// the attempt, and the stand-in retries it.
func (st *Stack) invokeAsync(ctx context.Context, payload []byte) error {
	st.mu.Lock()
	w := st.worker
	st.mu.Unlock()
	if w == nil {
		if st.Turn == nil {
			return errors.New("no turn function runs in the stack")
		}
		ctx, cancel := context.WithTimeout(ctx, turns.MaxTurnDuration)
		defer cancel()
		_, err := st.Turn.Handler.Invoke(ctx, json.RawMessage(payload))
		return err
	}
	inv := Invocation{Payload: payload}
	inv.Answer, inv.Err = w.Invoke(ctx, payload)
	inv.At = time.Now()
	st.mu.Lock()
	st.invocations = append(st.invocations, inv)
	st.mu.Unlock()
	return inv.Err
}
