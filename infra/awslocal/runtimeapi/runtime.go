package runtimeapi

import (
	"errors"
	"fmt"
	"io"
	"maps"
	"os/exec"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/commonly/runtime/shared/syncbuf"
)

// Runtime is a bootstrap process the server started and watches.
type Runtime struct {
	// Pid is the process's id (and its process group's).
	Pid    int
	cmd    *exec.Cmd
	out    syncbuf.Buffer
	exited chan struct{}
	err    error // the process's end, once exited is closed
}

// StartRuntime runs bootstrap as the environment's runtime, with exactly
// env ("K=V"; nothing is inherited) and the variables of Env, env's own
// winning except AWS_LAMBDA_RUNTIME_API. Its output is kept (Output) and,
// when logs is not nil, copied to logs as it comes. When it exits, the
// invocation it held ends with KindExited and its extensions are gone;
// the caller may start another (Lambda would start a new environment).
func (s *Server) StartRuntime(bootstrap string, env []string, logs io.Writer) (*Runtime, error) {
	vars := s.Env()
	have := map[string]bool{}
	for _, kv := range env {
		k, _, _ := strings.Cut(kv, "=")
		have[k] = true
	}
	full := slices.DeleteFunc(slices.Clone(env), func(kv string) bool { return strings.HasPrefix(kv, EndpointVar+"=") })
	for _, k := range slices.Sorted(maps.Keys(vars)) {
		if k == EndpointVar || !have[k] {
			full = append(full, k+"="+vars[k])
		}
	}
	r := &Runtime{exited: make(chan struct{})}
	r.cmd = exec.Command(bootstrap)
	r.cmd.Env = full
	var out io.Writer = &r.out
	if logs != nil {
		out = io.MultiWriter(&r.out, logs)
	}
	r.cmd.Stdout, r.cmd.Stderr = out, out
	// A process group of its own, so that Kill ends its children too.
	r.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil, errors.New("runtime API stand-in: the environment is closed")
	}
	if err := r.cmd.Start(); err != nil {
		s.mu.Unlock()
		return nil, fmt.Errorf("start the runtime %s: %w", bootstrap, err)
	}
	r.Pid = r.cmd.Process.Pid
	s.owned = append(s.owned, r)
	s.mu.Unlock()
	go s.watch(r)
	return r, nil
}

// watch waits for r's end: the invocation it held ends with it.
func (s *Server) watch(r *Runtime) {
	r.err = r.cmd.Wait()
	if r.err == nil {
		r.err = errors.New("the runtime exited with status 0")
	}
	s.mu.Lock()
	s.owned = slices.DeleteFunc(s.owned, func(o *Runtime) bool { return o == r })
	// Its internal extensions ended with it.
	clear(s.extensions)
	c := s.current
	s.mu.Unlock()
	close(r.exited)
	if c != nil {
		s.end(c, &Outcome{Kind: KindExited, ErrorType: "Runtime.ExitError", Err: fmt.Errorf("Runtime exited: %w", r.err)})
	}
	s.dispatch()
}

// Exited is closed when the process has exited.
func (r *Runtime) Exited() <-chan struct{} { return r.exited }

// Err is how the process ended (nil while it runs).
func (r *Runtime) Err() error {
	select {
	case <-r.exited:
		return r.err
	default:
		return nil
	}
}

// Output is what the process wrote so far.
func (r *Runtime) Output() string { return r.out.String() }

// Kill sends SIGKILL to the process's group; Exited tells when it is gone.
func (r *Runtime) Kill() error {
	return r.signal(syscall.SIGKILL)
}

// Close kills the process and waits for it to be gone.
func (r *Runtime) Close() error {
	err := r.Kill()
	<-r.exited
	return err
}

// stop ends r as Lambda ends a runtime at shutdown: SIGTERM, then
// SIGKILL at deadline.
func (r *Runtime) stop(deadline time.Time) error {
	_ = r.signal(syscall.SIGTERM)
	t := time.NewTimer(time.Until(deadline))
	defer t.Stop()
	select {
	case <-r.exited:
		return nil
	case <-t.C:
		return r.Close()
	}
}

func (r *Runtime) signal(sig syscall.Signal) error {
	select {
	case <-r.exited:
		return nil
	default:
	}
	if err := syscall.Kill(-r.Pid, sig); err != nil && !errors.Is(err, syscall.ESRCH) {
		return err
	}
	return nil
}
