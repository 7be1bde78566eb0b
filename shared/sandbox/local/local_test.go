package local

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/commonly/runtime/shared/sandbox"
)

// newSession creates a session on a real bubblewrap.
func newSession(t *testing.T, cfg Config) *Session {
	t.Helper()
	return create(t, newProvider(t, cfg))
}

// newProvider is a provider on a real bubblewrap, over a test BaseDir
// unless cfg names one. The Makefile installs bubblewrap; only its
// absence skips, and says so.
func newProvider(t testing.TB, cfg Config) *Provider {
	t.Helper()
	if _, err := exec.LookPath("bwrap"); err != nil && cfg.Bwrap == "" {
		t.Skip("bwrap is not installed (apt-get install bubblewrap): the local sandbox cannot be tested")
	}
	if cfg.BaseDir == "" {
		cfg.BaseDir = baseDir(t)
	}
	return New(cfg)
}

// create is a session of p, killed when the test ends.
func create(t testing.TB, p *Provider) *Session {
	t.Helper()
	s, err := p.Create(context.Background(), sandbox.Meta{RunID: "r"})
	if err != nil {
		t.Fatalf("Create: %v", err)
	}
	t.Cleanup(func() { _ = s.Kill(context.Background()) })
	return s.(*Session)
}

// baseDir is a test directory the unprivileged sandbox uid can traverse.
// (t.TempDir's parent is private to root.)
func baseDir(t testing.TB) string {
	d, err := os.MkdirTemp("", "commonly-local-test-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(d) })
	if err := os.Chmod(d, 0o711); err != nil {
		t.Fatal(err)
	}
	return d
}

func run(t *testing.T, s *Session, lang sandbox.Language, code string) sandbox.Execution {
	t.Helper()
	got, err := s.Execute(context.Background(), lang, code)
	if err != nil {
		t.Fatalf("Execute: %v (stderr %q)", err, got.Stderr)
	}
	return got
}

func TestPythonOutput(t *testing.T) {
	s := newSession(t, Config{})
	got := run(t, s, sandbox.Python, "import sys\nprint(sum(range(10)))\nprint('warn', file=sys.stderr)\n")
	if got.Stdout != "45\n" || got.Stderr != "warn\n" || got.Error != nil || got.Truncated {
		t.Errorf("got %+v", got)
	}
}

func TestJavaScript(t *testing.T) {
	s := newSession(t, Config{})
	got := run(t, s, sandbox.JavaScript, "console.log([1,2,3].map(x => x*2).join(','));\nconsole.error('oops');\n")
	if got.Stdout != "2,4,6\n" || got.Stderr != "oops\n" || got.Error != nil {
		t.Errorf("got %+v", got)
	}
	got = run(t, s, sandbox.JavaScript, "undefinedThing()")
	if got.Error == nil || got.Error.Name != "ReferenceError" || !strings.Contains(got.Error.Value, "undefinedThing") {
		t.Errorf("error = %+v", got.Error)
	}
}

func TestCodeErrors(t *testing.T) {
	s := newSession(t, Config{})
	tests := []struct {
		code, name, value string
	}{
		{"x = 1/0", "ZeroDivisionError", "division by zero"},
		{"x =", "SyntaxError", "invalid syntax"},
		{"import sys; sys.exit(3)", "ExitError", "exited with status 3"},
		{"raise KeyboardInterrupt", "KeyboardInterrupt", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := run(t, s, sandbox.Python, tt.code)
			if got.Error == nil || got.Error.Name != tt.name || got.Error.Value != tt.value {
				t.Errorf("Error = %+v, want %s: %s", got.Error, tt.name, tt.value)
			}
		})
	}
}

func TestNoNetwork(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var accepted atomic.Int32
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			accepted.Add(1)
			c.Close()
		}
	}()
	port := ln.Addr().(*net.TCPAddr).Port

	s := newSession(t, Config{})
	code := fmt.Sprintf(`
import socket
try:
    socket.create_connection(("127.0.0.1", %d), timeout=2)
    print("connected")
except OSError as e:
    print("blocked", e.errno)
try:
    socket.create_connection(("1.1.1.1", 53), timeout=2)
    print("internet")
except OSError as e:
    print("blocked", e.errno)
print(sorted(n for _, n in socket.if_nameindex()))
`, port)
	got := run(t, s, sandbox.Python, code)
	if !strings.HasPrefix(got.Stdout, "blocked") || strings.Contains(got.Stdout, "connected") || strings.Contains(got.Stdout, "internet") {
		t.Errorf("network reachable from the sandbox: %q", got.Stdout)
	}
	if !strings.Contains(got.Stdout, "['lo']") {
		t.Errorf("interfaces other than a private loopback: %q", got.Stdout)
	}
	if n := accepted.Load(); n != 0 {
		t.Errorf("host listener accepted %d connections", n)
	}
}

func TestNoHostEnvironment(t *testing.T) {
	const secret = "sk-commonly-test-secret-9f8e7d"
	t.Setenv("COMMONLY_TEST_SECRET", secret)
	s := newSession(t, Config{})
	got := run(t, s, sandbox.Python, `
import os
print(sorted(os.environ))
for pid in os.listdir("/proc"):
    if pid.isdigit():
        try: print(open(f"/proc/{pid}/environ").read())
        except OSError: pass
`)
	if strings.Contains(got.Stdout, secret) || strings.Contains(got.Stdout, "COMMONLY_TEST_SECRET") {
		t.Fatalf("host environment visible: %q", got.Stdout)
	}
	first, _, _ := strings.Cut(got.Stdout, "\n")
	for _, k := range []string{"'PATH'", "'HOME'", "'LANG'"} {
		if !strings.Contains(first, k) {
			t.Errorf("environment %s lacks %s", first, k)
		}
	}
}

func TestFilesystem(t *testing.T) {
	s := newSession(t, Config{})
	got := run(t, s, sandbox.Python, `
import os
def attempt(what, f):
    try:
        f(); print(what, "ok")
    except OSError as e:
        print(what, "denied", e.errno)
attempt("write /usr", lambda: open("/usr/x", "w"))
attempt("write /etc", lambda: open("/etc/x", "w"))
attempt("read /etc/passwd", lambda: open("/etc/passwd").read())
attempt("list /root", lambda: os.listdir("/root"))
attempt("write work", lambda: open("kept.txt", "w").write("kept"))
attempt("write tmp", lambda: open("/tmp/t.txt", "w").write("t"))
print("uid", os.getuid())
print([l for l in open("/proc/self/status") if l.startswith("CapEff")][0].strip())
`)
	want := []string{
		"write /usr denied", "write /etc denied", "read /etc/passwd denied", "list /root denied",
		"write work ok", "write tmp ok", "CapEff:\t0000000000000000",
	}
	for _, w := range want {
		if !strings.Contains(got.Stdout, w) {
			t.Errorf("stdout lacks %q:\n%s", w, got.Stdout)
		}
	}
	if os.Geteuid() == 0 && !strings.Contains(got.Stdout, "uid 65534") {
		t.Errorf("run as root's uid:\n%s", got.Stdout)
	}
	// The files are in the session's tmpfs, not on the host's disk.
	if entries, err := os.ReadDir(s.Dir()); err != nil || len(entries) != 0 {
		t.Errorf("the host's mount point holds %d entries (%v), want none", len(entries), err)
	}

	// The working directory and /tmp persist across the session's runs,
	// as on E2B.
	got = run(t, s, sandbox.Python, `
import os
print(open("kept.txt").read(), os.path.exists("/tmp/t.txt"), os.getcwd())
`)
	if got.Stdout != "kept True /home/user\n" {
		t.Errorf("second run: %q", got.Stdout)
	}
}

func TestTimeLimit(t *testing.T) {
	// Long enough for the interpreter to start and print on a loaded
	// machine (make test runs packages side by side on two cores).
	s := newSession(t, Config{RunTimeout: 3 * time.Second})
	start := time.Now()
	got, err := s.Execute(context.Background(), sandbox.Python, "print('started')\nwhile True: pass\n")
	if !errors.Is(err, sandbox.ErrTimeout) {
		t.Fatalf("err = %v, want ErrTimeout", err)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("stopped after %v, want about 3s", d)
	}
	if got.Stdout != "started\n" {
		t.Errorf("partial stdout = %q", got.Stdout)
	}

	// The caller's deadline counts too, and the session survives a timeout.
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	if _, err := s.Execute(ctx, sandbox.JavaScript, "for(;;){}"); !errors.Is(err, sandbox.ErrTimeout) {
		t.Fatalf("err = %v, want ErrTimeout", err)
	}
	if got := run(t, s, sandbox.Python, "print('alive')"); got.Stdout != "alive\n" {
		t.Errorf("after timeouts: %q", got.Stdout)
	}
}

func TestMemoryLimit(t *testing.T) {
	s := newSession(t, Config{})
	got := run(t, s, sandbox.Python, "b = bytearray(2 * 1024**3)\nprint('allocated')\n")
	if strings.Contains(got.Stdout, "allocated") || got.Error == nil || got.Error.Name != "MemoryError" {
		t.Errorf("2 GiB allocation: stdout %q error %+v", got.Stdout, got.Error)
	}
}

func TestProcessAndFileLimits(t *testing.T) {
	s := newSession(t, Config{MaxProcs: 32, MaxFileBytes: 1 << 20})
	got := run(t, s, sandbox.Python, `
import os, time
n = 0
try:
    for _ in range(200):
        if os.fork() == 0:
            time.sleep(2); os._exit(0)
        n += 1
    print("forked", n)
except OSError as e:
    print("fork refused after", n)
try:
    open("big", "wb").write(b"x" * (2 << 20))
    print("wrote big")
except OSError as e:
    print("write refused", e.errno)
`)
	if !strings.Contains(got.Stdout, "fork refused after") {
		t.Errorf("process limit: %q", got.Stdout)
	}
	if !strings.Contains(got.Stdout, "write refused 27") { // EFBIG
		t.Errorf("file size limit: %q", got.Stdout)
	}
}

func TestOutputCapped(t *testing.T) {
	s := newSession(t, Config{MaxOutputBytes: 1000})
	got := run(t, s, sandbox.Python, "print('x' * 100000)\nprint('done')\n")
	if !got.Truncated || len(got.Stdout) != 1000+len(sandbox.TruncatedMarker) || !strings.HasSuffix(got.Stdout, sandbox.TruncatedMarker) {
		t.Errorf("Truncated %v, len %d", got.Truncated, len(got.Stdout))
	}
}

func TestKill(t *testing.T) {
	p := newProvider(t, Config{})
	s := create(t, p)
	run(t, s, sandbox.Python, "open('f', 'w').write('x')")

	started := make(chan struct{})
	p.started = sync.OnceFunc(func() { close(started) })
	done := make(chan error, 1)
	go func() {
		_, err := s.Execute(context.Background(), sandbox.Python, "import time\ntime.sleep(60)\n")
		done <- err
	}()
	<-started
	if err := s.Kill(context.Background()); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if !errors.Is(err, sandbox.ErrLost) {
			t.Errorf("run in progress: %v, want ErrLost", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the run survived Kill")
	}
	if _, err := os.Stat(s.Dir()); !os.IsNotExist(err) {
		t.Errorf("session directory remains: %v", err)
	}
	if _, err := s.Execute(context.Background(), sandbox.Python, "1"); !errors.Is(err, sandbox.ErrLost) {
		t.Errorf("run after Kill: %v, want ErrLost", err)
	}
	if err := s.Kill(context.Background()); err != nil {
		t.Errorf("second Kill: %v", err)
	}
}

// expiry is a lifetime timer that fires when the test says so.
type expiry struct {
	after   time.Duration
	fire    func()
	stopped bool
}

func (e *expiry) Stop() bool { e.stopped = true; return true }

func TestLifetimeKills(t *testing.T) {
	p := newProvider(t, Config{Lifetime: 42 * time.Second})
	timers := make(chan *expiry, 1)
	p.afterFunc = func(d time.Duration, f func()) stopper {
		e := &expiry{after: d, fire: f}
		timers <- e
		return e
	}
	s := create(t, p)
	e := <-timers
	if e.after != 42*time.Second {
		t.Errorf("lifetime timer set for %v, want 42s", e.after)
	}
	run(t, s, sandbox.Python, "1")
	e.fire()
	if _, err := s.Execute(context.Background(), sandbox.Python, "1"); !errors.Is(err, sandbox.ErrLost) {
		t.Errorf("run after the lifetime: %v, want ErrLost", err)
	}
	if _, err := os.Stat(s.Dir()); !os.IsNotExist(err) {
		t.Errorf("session directory remains: %v", err)
	}
}

func TestUnavailable(t *testing.T) {
	tests := []struct {
		name string
		cfg  Config
	}{
		{"bwrap missing", Config{Bwrap: "/nonexistent/bwrap"}},
		{"bwrap cannot build a sandbox", Config{Bwrap: "/bin/false"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.cfg.BaseDir = baseDir(t)
			_, err := New(tt.cfg).Create(context.Background(), sandbox.Meta{})
			if !errors.Is(err, sandbox.ErrUnavailable) {
				t.Fatalf("err = %v, want ErrUnavailable", err)
			}
			if entries, _ := os.ReadDir(tt.cfg.BaseDir); len(entries) != 0 {
				t.Errorf("left %d directories behind", len(entries))
			}
		})
	}
	t.Run("interpreter missing", func(t *testing.T) {
		s := newSession(t, Config{Node: "/nonexistent/node"})
		if _, err := s.Execute(context.Background(), sandbox.JavaScript, "1"); !errors.Is(err, sandbox.ErrUnavailable) {
			t.Errorf("err = %v, want ErrUnavailable", err)
		}
	})
}

func TestExitError(t *testing.T) {
	tests := []struct {
		code   int
		stderr string
		want   sandbox.ExecError
	}{
		{1, "Traceback (most recent call last):\n  File \"<stdin>\", line 1\nValueError: bad value\n", sandbox.ExecError{Name: "ValueError", Value: "bad value"}},
		{1, "[stdin]:1\nx\n^\n\nTypeError: x is not a function\n    at [stdin]:1:1\n\nNode.js v20.0.0\n", sandbox.ExecError{Name: "TypeError", Value: "x is not a function"}},
		{1, "mod.sub.CustomError: boom\n", sandbox.ExecError{Name: "mod.sub.CustomError", Value: "boom"}},
		{2, "just words\n", sandbox.ExecError{Name: "ExitError", Value: "exited with status 2"}},
		{137, "", sandbox.ExecError{Name: "Killed", Value: "terminated by signal 9 (killed); a memory, CPU or process limit may have been reached"}},
	}
	for _, tt := range tests {
		if got := exitError(tt.code, tt.stderr); *got != tt.want {
			t.Errorf("exitError(%d, %q) = %+v, want %+v", tt.code, tt.stderr, *got, tt.want)
		}
	}
}

func TestResolveInterpreter(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "versions", "3.12", "bin", "python3.12")
	if err := os.MkdirAll(filepath.Dir(bin), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "python3")
	if err := os.Symlink(bin, link); err != nil {
		t.Fatal(err)
	}
	plain := filepath.Join(dir, "not-executable")
	if err := os.WriteFile(plain, nil, 0o644); err != nil {
		t.Fatal(err)
	}

	type resolveCase struct {
		name       string
		configured string
		wantArgv0  string
		wantErr    bool
	}
	tests := []resolveCase{
		{"a symlink resolves to its target", link, bin, false},
		{"not executable", plain, "", true},
		{"missing", filepath.Join(dir, "nope"), "", true},
	}
	if _, err := os.Stat("/usr/bin/python3"); err == nil {
		real, _ := filepath.EvalSymlinks("/usr/bin/python3")
		tests = append(tests, resolveCase{"default prefers /usr/bin", "", real, false})
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := resolveInterpreter(tt.configured, "python3", "-")
			if (in.err != nil) != tt.wantErr {
				t.Fatalf("err = %v", in.err)
			}
			if tt.wantErr {
				if !errors.Is(in.err, sandbox.ErrUnavailable) {
					t.Errorf("err = %v, want ErrUnavailable", in.err)
				}
				return
			}
			if in.argv[0] != tt.wantArgv0 || in.argv[1] != "-" {
				t.Errorf("argv %v, want %s -", in.argv, tt.wantArgv0)
			}
		})
	}
}

// What the code prints reaches the caller's Output as it is printed,
// whole characters at a time: the first line well before the run ends.
func TestOutputStreamsAsPrinted(t *testing.T) {
	s := newSession(t, Config{})
	var mu sync.Mutex
	var got []string
	var firstAt time.Time
	ctx := sandbox.WithOutput(context.Background(), func(stream, text string) {
		mu.Lock()
		defer mu.Unlock()
		if firstAt.IsZero() {
			firstAt = time.Now()
		}
		got = append(got, stream+":"+text)
	})
	exec, err := s.Execute(ctx, sandbox.Python, "import sys, time\nprint('é1')\ntime.sleep(1)\nprint('two', file=sys.stderr)\n")
	ended := time.Now()
	if err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	// Python writes a print's text and its newline apart: join them.
	streams := map[string]string{}
	var order []string
	for _, g := range got {
		stream, text, _ := strings.Cut(g, ":")
		if len(order) == 0 || order[len(order)-1] != stream {
			order = append(order, stream)
		}
		streams[stream] += text
	}
	if streams["stdout"] != "é1\n" || streams["stderr"] != "two\n" || strings.Join(order, ",") != "stdout,stderr" || exec.Stdout != "é1\n" || exec.Stderr != "two\n" {
		t.Fatalf("streamed %q, execution %+v", got, exec)
	}
	if lead := ended.Sub(firstAt); lead < 700*time.Millisecond {
		t.Errorf("the first line arrived %s before the run ended: buffered", lead)
	}
}
