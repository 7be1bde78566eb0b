package localstack

import (
	"context"
	"io"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/commonly/runtime/infra/awslocal/rie"
	"github.com/commonly/runtime/infra/awslocal/runtimeapi"
)

// worker is the turn function's bootstrap in an execution environment of
// its own (Config.Worker): Lambda's Runtime API served by the stand-in
// (infra/awslocal/runtimeapi), which the production bootstrap polls as in
// AWS. Each dispatched turn runs in it, one at a time; when its process
// is gone (killed, or ended at the function's timeout) the next
// invocation starts another, as Lambda starts a new environment.
type worker struct {
	env  *runtimeapi.Server
	path string
	vars []string
	logs io.Writer
	home string

	mu   sync.Mutex // one invocation at a time, as one environment serves
	pmu  sync.Mutex // proc
	proc *runtimeapi.Runtime
}

// startWorker starts the environment and its first runtime.
func (st *Stack) startWorker(path string) (*worker, error) {
	timeout := time.Duration(0) // the stand-in's default: Lambda's longest
	if s, err := strconv.Atoi(st.Env["AWS_LAMBDA_FUNCTION_TIMEOUT"]); err == nil && s > 0 {
		timeout = time.Duration(s) * time.Second
	}
	env, err := runtimeapi.Start(runtimeapi.Config{FunctionName: st.Env["AWS_LAMBDA_FUNCTION_NAME"], Account: Account, Timeout: timeout})
	if err != nil {
		return nil, err
	}
	home, err := os.MkdirTemp("", "localstack-worker-")
	if err != nil {
		_ = env.Close()
		return nil, err
	}
	w := &worker{env: env, path: path, vars: rie.Env(home, st.Env, st.Endpoints()), logs: st.cfg.WorkerLogs, home: home}
	if err := w.start(); err != nil {
		w.close()
		return nil, err
	}
	return w, nil
}

// start runs a new runtime in the environment.
func (w *worker) start() error {
	p, err := w.env.StartRuntime(w.path, w.vars, w.logs)
	if err != nil {
		return err
	}
	w.pmu.Lock()
	w.proc = p
	w.pmu.Unlock()
	return nil
}

func (w *worker) runtime() *runtimeapi.Runtime {
	w.pmu.Lock()
	defer w.pmu.Unlock()
	return w.proc
}

// Invoke runs one invocation to its outcome. A function error, a
// timeout or the runtime's death is a *FunctionError with Lambda's
// error type, its document (if any) the answer.
func (w *worker) Invoke(ctx context.Context, payload []byte) ([]byte, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	select {
	case <-w.runtime().Exited():
		if err := w.start(); err != nil {
			return nil, err
		}
	default:
	}
	out, err := w.env.InvokeWait(ctx, runtimeapi.Invocation{Payload: payload})
	if err != nil {
		return nil, err
	}
	switch out.Kind {
	case runtimeapi.KindResponse:
		return out.Body, nil
	case runtimeapi.KindTimeout, runtimeapi.KindExited:
		// The environment's runtime is gone (a timeout kills it): the
		// next invocation starts another once it has exited.
		select {
		case <-w.runtime().Exited():
		case <-ctx.Done():
		}
	}
	msg := string(out.Body)
	if out.Err != nil {
		msg = out.Err.Error()
	}
	return out.Body, &FunctionError{Type: out.ErrorType, Message: msg}
}

// Kill ends the runtime's process with SIGKILL, mid-invocation if one
// runs (its outcome: Runtime.ExitError).
func (w *worker) Kill() error { return w.runtime().Kill() }

func (w *worker) close() {
	if p := w.runtime(); p != nil {
		_ = p.Close()
	}
	_ = w.env.Close()
	_ = os.RemoveAll(w.home)
}
