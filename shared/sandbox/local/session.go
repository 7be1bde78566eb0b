package local

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/commonly/runtime/shared/sandbox"
)

// Session is one local sandbox: a tmpfs whose home each run sees as its
// working directory. Unlike E2B's kernel, variables do not survive a run;
// files do.
type Session struct {
	p       *Provider
	id      string
	runID   string // the run it serves, for the reaper's list
	fs      *sessionFS
	release func() // gives the provider's slot back
	started time.Time
	// runSlot serialises runs, as a kernel does, and lets Kill wait for
	// the run in progress to be gone before removing its files.
	runSlot chan struct{}

	mu        sync.Mutex
	expiry    stopper
	killed    bool
	cancelRun context.CancelFunc
}

var _ sandbox.Session = (*Session)(nil)

// ID implements sandbox.Session.
func (s *Session) ID() string { return s.id }

// Dir is the session's mount point on the host: an empty directory (the
// files are in the session's tmpfs, which only its runs see).
func (s *Session) Dir() string { return s.fs.dir }

// Execute implements sandbox.Session. The run is bounded by ctx and by the
// provider's RunTimeout, whichever ends first; either gives ErrTimeout.
func (s *Session) Execute(ctx context.Context, lang sandbox.Language, code string) (sandbox.Execution, error) {
	in, err := s.p.interpreter(lang)
	if err != nil {
		return sandbox.Execution{}, fmt.Errorf("local sandbox: %w", err)
	}
	select {
	case s.runSlot <- struct{}{}:
	case <-ctx.Done():
		return sandbox.Execution{}, s.contextFailure(ctx)
	}
	defer func() { <-s.runSlot }()

	runCtx, cancel := context.WithTimeout(ctx, s.p.cfg.RunTimeout)
	defer cancel()
	s.mu.Lock()
	if s.killed {
		s.mu.Unlock()
		return sandbox.Execution{}, fmt.Errorf("local sandbox %s: %w: %w", s.id, sandbox.ErrLost, errKilled)
	}
	s.cancelRun = cancel
	s.mu.Unlock()

	res, err := s.p.run(runCtx, s.fs, in.argv, code)
	exec := sandbox.Execution{
		Stdout:    res.stdout.String(),
		Stderr:    res.stderr.String(),
		Truncated: res.stdout.Truncated() || res.stderr.Truncated(),
	}
	s.mu.Lock()
	killed := s.killed
	s.mu.Unlock()
	switch {
	case killed:
		return exec, fmt.Errorf("local sandbox %s: %w: %w", s.id, sandbox.ErrLost, errKilled)
	case errors.Is(err, context.DeadlineExceeded):
		return exec, fmt.Errorf("local sandbox %s: %w", s.id, sandbox.ErrTimeout)
	case err != nil && ctx.Err() != nil:
		return exec, s.contextFailure(ctx)
	case err != nil:
		return exec, fmt.Errorf("local sandbox %s: %w: %w", s.id, sandbox.ErrUnavailable, err)
	}
	if res.exitCode != 0 {
		exec.Error = exitError(res.exitCode, exec.Stderr)
	}
	return exec, nil
}

func (s *Session) contextFailure(ctx context.Context) error {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return fmt.Errorf("local sandbox %s: %w", s.id, sandbox.ErrTimeout)
	}
	return fmt.Errorf("local sandbox %s: %w", s.id, ctx.Err())
}

// Kill implements sandbox.Session: it stops the run in progress, frees
// the session's tmpfs (its files with it), removes the mount point and
// gives the provider's slot back. Killing twice is fine.
func (s *Session) Kill(ctx context.Context) error {
	s.mu.Lock()
	if s.killed {
		s.mu.Unlock()
		return nil
	}
	s.killed = true
	if s.cancelRun != nil {
		s.cancelRun()
	}
	s.expiry.Stop()
	s.mu.Unlock()
	s.p.untrack(s.id)

	// Wait for the run to be reaped: its nsenter opens the namespaces
	// through our descriptors.
	select {
	case s.runSlot <- struct{}{}:
		s.free()
		return nil
	case <-ctx.Done():
		// The run was cancelled and is on its way out: free after it.
		go func() {
			s.runSlot <- struct{}{}
			s.free()
		}()
		return fmt.Errorf("local sandbox %s: kill: %w", s.id, ctx.Err())
	}
}

// free releases what the session holds; the caller holds runSlot.
func (s *Session) free() {
	defer func() { <-s.runSlot }()
	s.fs.close()
	s.release()
}

// exceptionLine matches the "Name: message" line interpreters print last
// for an uncaught exception (Python's traceback, node's stack head). It is
// compiled on first use: a function with an E2B key never runs code here,
// so its cold start should not pay for it.
var exceptionLine = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^([A-Za-z_][A-Za-z0-9_.]*(?:Error|Exception|Interrupt|Exit|Warning)):?\s?(.*)$`)
})

// exitError describes a non-zero exit the way E2B reports exceptions, so
// the model sees one shape whichever provider ran its code. The traceback
// is already in stderr and is not repeated.
func exitError(code int, stderr string) *sandbox.ExecError {
	lines := strings.Split(strings.TrimRight(stderr, "\n"), "\n")
	for i := len(lines) - 1; i >= 0 && i >= len(lines)-40; i-- {
		if m := exceptionLine().FindStringSubmatch(strings.TrimSpace(lines[i])); m != nil {
			return &sandbox.ExecError{Name: m[1], Value: m[2]}
		}
	}
	if code > 128 && code < 128+65 {
		sig := syscall.Signal(code - 128)
		return &sandbox.ExecError{
			Name:  "Killed",
			Value: fmt.Sprintf("terminated by signal %d (%v); a memory, CPU or process limit may have been reached", int(sig), sig),
		}
	}
	return &sandbox.ExecError{Name: "ExitError", Value: fmt.Sprintf("exited with status %d", code)}
}
