// Package rie runs a Lambda function's bootstrap under the AWS Lambda
// Runtime Interface Emulator, as `sam local invoke` does inside its
// container, and invokes it: the functions' emulator tests, `make
// invoke` and the benchmarks' cold starts use it.
package rie

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/commonly/runtime/shared/syncbuf"
)

// Emulator is a bootstrap running under the emulator.
type Emulator struct {
	// URL is the emulator's invocations endpoint.
	URL string
	// Started is the time just before the emulator was started: the
	// origin of a cold start's measure.
	Started time.Time
	cmd     *exec.Cmd
	out     syncbuf.Buffer
}

// Start runs bootstrap under the emulator binary bin on free loopback
// ports, with exactly the environment env ("K=V"; nothing is inherited).
// What the emulator and the function write is kept (Output) and, when
// logs is not nil, copied to logs as it comes.
func Start(bin, bootstrap string, env []string, logs io.Writer) (*Emulator, error) {
	addr, err := FreeAddr()
	if err != nil {
		return nil, err
	}
	apiAddr, err := FreeAddr()
	if err != nil {
		return nil, err
	}
	e := &Emulator{URL: "http://" + addr + "/2015-03-31/functions/function/invocations"}
	e.cmd = exec.Command(bin, "--runtime-interface-emulator-address", addr, "--runtime-api-address", apiAddr, bootstrap)
	e.cmd.Env = env
	var out io.Writer = &e.out
	if logs != nil {
		out = io.MultiWriter(&e.out, logs)
	}
	e.cmd.Stdout, e.cmd.Stderr = out, out
	// A process group of its own, so that Close ends the bootstrap (the
	// emulator's child) with it.
	e.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	e.Started = time.Now()
	if err := e.cmd.Start(); err != nil {
		return nil, fmt.Errorf("start the emulator %s: %w", bin, err)
	}
	return e, nil
}

// Invoke sends one event and returns the function's response: its
// result, or the error document of a function error (errorType), which
// the emulator answers with 200 as Lambda does. The first call waits for
// the emulator to listen, up to ten seconds.
func (e *Emulator) Invoke(ctx context.Context, payload []byte) ([]byte, error) {
	deadline := time.Now().Add(10 * time.Second)
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, e.URL, bytes.NewReader(payload))
		if err != nil {
			return nil, err
		}
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			body, rerr := io.ReadAll(resp.Body)
			resp.Body.Close()
			if rerr == nil && resp.StatusCode != http.StatusOK {
				rerr = fmt.Errorf("invoke: %d %s", resp.StatusCode, body)
			}
			// An invocation that arrives while the emulator still tears
			// down the last one's environment (a timeout's SIGKILL) is
			// refused before it reaches the function (Sandbox.Failure,
			// ErrGateCanceled). Lambda would give it a fresh environment,
			// so it is sent again rather than counted as the function's.
			if !resetting(body) || time.Now().After(deadline) || ctx.Err() != nil {
				return body, rerr
			}
		} else if time.Now().After(deadline) || ctx.Err() != nil {
			return nil, fmt.Errorf("invoke: %w", err)
		}
		time.Sleep(20 * time.Millisecond) // the emulator is still starting, or resetting
	}
}

// resetting reports whether an answer is the emulator's refusal of an
// invocation during a reset, which the function never saw.
func resetting(body []byte) bool {
	doc, ok := ErrorDocument(body)
	return ok && doc.Type == "Sandbox.Failure" && strings.Contains(doc.Message, "ErrGateCanceled")
}

// ErrorDoc is the error document the emulator answers a failed
// invocation with, as Lambda does.
type ErrorDoc struct {
	Type    string `json:"errorType"`
	Message string `json:"errorMessage"`
}

// ErrorDocument reads an answer as an error document; ok is false when it
// is not one (a result).
func ErrorDocument(body []byte) (ErrorDoc, bool) {
	var doc ErrorDoc
	if err := json.Unmarshal(body, &doc); err != nil || doc.Type == "" {
		return ErrorDoc{}, false
	}
	return doc, true
}

// KillFunction ends the function's process (the emulator's child) with
// SIGKILL, as an execution environment is lost mid-invocation: the
// invocation in flight fails (Runtime.ExitError) and the emulator starts
// the bootstrap again for the next one.
func (e *Emulator) KillFunction() error {
	pids, err := children(e.cmd.Process.Pid)
	if err != nil {
		return err
	}
	if len(pids) == 0 {
		return errors.New("rie: the function's process is not running")
	}
	var errs []error
	for _, pid := range pids {
		errs = append(errs, syscall.Kill(pid, syscall.SIGKILL))
	}
	return errors.Join(errs...)
}

// children are the processes whose parent is pid (Linux: /proc).
func children(pid int) ([]int, error) {
	tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	if err != nil {
		return nil, err
	}
	var pids []int
	for _, t := range tasks {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/children", pid, t.Name()))
		if err != nil {
			continue // the thread ended
		}
		for _, f := range strings.Fields(string(b)) {
			if n, err := strconv.Atoi(f); err == nil {
				pids = append(pids, n)
			}
		}
	}
	return pids, nil
}

// Output is what the emulator and the function wrote so far.
func (e *Emulator) Output() string { return e.out.String() }

// Close stops the function, then the emulator: the function first, so
// that it never sees its Runtime API go away (aws-lambda-go says so).
func (e *Emulator) Close() error {
	_ = e.KillFunction()
	err := syscall.Kill(-e.cmd.Process.Pid, syscall.SIGKILL)
	var exit *exec.ExitError
	if werr := e.cmd.Wait(); werr != nil && !errors.As(werr, &exit) {
		err = errors.Join(err, werr)
	}
	return err
}

// Env is a bootstrap's whole environment: a minimal PATH, HOME, and the
// variables of each map in turn (later maps win), sorted.
func Env(home string, vars ...map[string]string) []string {
	all := map[string]string{"PATH": "/usr/bin:/bin", "HOME": home}
	for _, m := range vars {
		maps.Copy(all, m)
	}
	env := make([]string, 0, len(all))
	for _, k := range slices.Sorted(maps.Keys(all)) {
		env = append(env, k+"="+all[k])
	}
	return env
}

// FreeAddr is a loopback address with a port free at the time of the
// call, for a process that takes its address as a flag.
func FreeAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

// TB is the part of testing.TB the test helpers use (the package is
// linked into commands too, which need not link testing).
type TB interface {
	Helper()
	Skip(args ...any)
	Fatal(args ...any)
	Logf(format string, args ...any)
	Failed() bool
	Cleanup(func())
}

// Binaries are the emulator (RIE_BIN) and the bootstrap that bootstrapVar
// names, as `make test` sets them after building; t is skipped when
// either is unset.
func Binaries(t TB, getenv func(string) string, bootstrapVar string) (bin, bootstrap string) {
	t.Helper()
	bin, bootstrap = getenv("RIE_BIN"), getenv(bootstrapVar)
	if bin == "" || bootstrap == "" {
		t.Skip("RIE_BIN and " + bootstrapVar + " are set by `make test`")
	}
	return bin, bootstrap
}

// StartTest is Start for a test: t fails if the emulator does not start,
// and it is closed at t's end, its output logged when t failed.
func StartTest(t TB, bin, bootstrap string, env []string) *Emulator {
	t.Helper()
	e, err := Start(bin, bootstrap, env, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = e.Close()
		if t.Failed() {
			t.Logf("emulator output:\n%s", e.Output())
		}
	})
	return e
}
