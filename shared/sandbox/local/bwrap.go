package local

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/commonly/runtime/shared/sandbox"
)

// sandboxPath is PATH inside the sandbox: the system's program
// directories and those of interpreters installed outside /usr.
func sandboxPath(interpreters ...interpreter) string {
	path := "/usr/local/bin:/usr/bin:/bin"
	for _, in := range interpreters {
		if len(in.argv) > 0 && !strings.HasPrefix(in.argv[0], "/usr/") {
			path += ":" + in.argv[0][:strings.LastIndex(in.argv[0], "/")]
		}
	}
	return path
}

// args is the bwrap command line of one run of argv over the session's
// tmpfs (fd 3: the status, fd 4: the seccomp filter).
func (p *Provider) args(fs *sessionFS, argv []string) []string {
	a := []string{
		// Every namespace: no network (a fresh, empty net namespace), no
		// host pids, ipc or hostname; a user namespace that may not nest,
		// in which the code is UID, without capabilities.
		"--unshare-all", "--unshare-user", "--disable-userns",
		"--uid", strconv.Itoa(p.cfg.UID), "--gid", strconv.Itoa(p.cfg.GID),
		"--die-with-parent", // the run dies with us
		"--new-session",     // no TIOCSTI into a terminal of ours
		"--cap-drop", "ALL",
		"--hostname", "sandbox",
	}
	view := p.hostView()
	a = append(a, view.args...)
	a = append(a,
		"--proc", "/proc",
		// The session's tmpfs, seen from the namespace nsenter put us in.
		// --dev's own tmpfs is unbounded: it is made read-only (its
		// devices still work) under the session's /dev/shm.
		"--dev", "/dev",
		"--bind", fs.path(fsShm), "/dev/shm",
		"--remount-ro", "/dev",
		"--bind", fs.path(fsTmp), "/tmp",
		"--bind", fs.path(fsHome), WorkDir,
		"--chdir", WorkDir,
		// The root bwrap builds is a tmpfs: freeze it, so that only the
		// session's tmpfs takes writes.
		"--remount-ro", "/",
		// Nothing of the host's environment: only what interpreters need.
		"--clearenv",
		"--setenv", "PATH", p.path,
		"--setenv", "HOME", WorkDir,
		"--setenv", "LANG", "C.UTF-8",
		"--setenv", "TMPDIR", "/tmp",
	)
	if len(view.libDirs) > 0 {
		a = append(a, "--setenv", "LD_LIBRARY_PATH", strings.Join(view.libDirs, ":"))
	}
	a = append(a, "--json-status-fd", "3")
	if p.seccomp != nil { // New refuses to run without; benchmarks compare
		a = append(a, "--seccomp", "4")
	}
	a = append(a,
		"--",
		// Limits are set inside, on the program only: bwrap itself needs
		// more address space than we allow the code.
		p.tools.prlimit,
		"--as="+strconv.FormatInt(p.cfg.MemoryBytes, 10),
		"--nproc="+strconv.Itoa(p.cfg.MaxProcs),
		"--cpu="+strconv.Itoa(cpuSeconds(p.cfg.RunTimeout)),
		"--fsize="+strconv.FormatInt(p.cfg.MaxFileBytes, 10),
		"--nofile=256",
		"--core=0",
		"--",
	)
	return append(a, argv...)
}

// cpuSeconds is the CPU-time limit: a backstop just above the wall-clock
// limit, for processes that escape the kill (they cannot, but rlimits are
// cheap).
func cpuSeconds(d time.Duration) int {
	return int(math.Ceil(d.Seconds())) + 1
}

// runResult is one finished bwrap run.
type runResult struct {
	stdout, stderr *sandbox.CappedBuffer
	// exitCode is the program's exit status, as bwrap reports it (128+n
	// for signal n); -1 when bwrap never reported one (set-up failed).
	exitCode int
	elapsed  time.Duration
}

// run executes argv in a new sandbox over the session's tmpfs, feeding
// stdin. The run is killed, with its whole process group, when ctx is
// done; the error is then ctx's. Other errors mean bwrap could not be
// started.
func (p *Provider) run(ctx context.Context, fs *sessionFS, argv []string, stdin string) (runResult, error) {
	res := runResult{
		stdout:   sandbox.NewCappedBuffer(p.cfg.MaxOutputBytes),
		stderr:   sandbox.NewCappedBuffer(p.cfg.MaxOutputBytes),
		exitCode: -1,
	}
	statusR, statusW, err := os.Pipe()
	if err != nil {
		return res, fmt.Errorf("status pipe: %w", err)
	}
	defer statusR.Close()
	filterR, err := p.filterPipe()
	if err != nil {
		statusW.Close()
		return res, err
	}
	defer filterR.Close()

	// nsenter runs as root when we are (to enter namespaces owned by the
	// sandbox's uid and become their root), with no supplementary groups.
	var nsCred *syscall.Credential
	if p.cred != nil {
		nsCred = &syscall.Credential{Uid: 0, Gid: 0, Groups: []uint32{}}
	}
	args := append(fs.nsenterArgs(p.cred != nil), "--", p.tools.bwrap)
	cmd := execCommand(ctx, p.tools.nsenter, append(args, p.args(fs, argv)...)...)
	cmd.Stdin = strings.NewReader(stdin)
	// What the code prints is kept (capped) and, when the caller listens
	// (sandbox.WithOutput), handed on as it comes (python runs with -u).
	out := sandbox.OutputOf(ctx)
	cmd.Stdout = io.MultiWriter(res.stdout, sandbox.NewOutputWriter(out, sandbox.Stdout))
	cmd.Stderr = io.MultiWriter(res.stderr, sandbox.NewOutputWriter(out, sandbox.Stderr))
	cmd.ExtraFiles = []*os.File{statusW, filterR} // fd 3: --json-status-fd, fd 4: --seccomp
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Setpgid:    true,
		Pdeathsig:  syscall.SIGKILL,
		Credential: nsCred,
	}

	start := time.Now()
	err = cmd.Start()
	statusW.Close() // ours; bwrap holds its own copy
	if err != nil {
		return res, fmt.Errorf("start bwrap: %w", err)
	}
	if p.started != nil {
		p.started()
	}
	status := make(chan int, 1)
	go func() { status <- readExitCode(statusR) }()
	waitErr := cmd.Wait()
	res.elapsed = time.Since(start)
	res.exitCode = <-status
	if ctx.Err() != nil {
		return res, ctx.Err()
	}
	if res.exitCode < 0 && waitErr != nil {
		return res, fmt.Errorf("bwrap: %w: %s", waitErr, firstLine(res.stderr.String()))
	}
	return res, nil
}

// filterPipe is a pipe holding the seccomp program, for bwrap to read
// whole: it fits in the pipe's buffer, so the write never blocks.
func (p *Provider) filterPipe() (*os.File, error) {
	r, w, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("seccomp pipe: %w", err)
	}
	_, err = w.Write(p.seccomp)
	w.Close()
	if err != nil {
		r.Close()
		return nil, fmt.Errorf("seccomp pipe: %w", err)
	}
	return r, nil
}

// execCommand is a command with none of our environment, whose whole
// process group is killed when ctx is done: with bwrap gone,
// --die-with-parent takes the sandbox's init and so its pid namespace.
func execCommand(ctx context.Context, name string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Env = []string{}
	cmd.Dir = "/"
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 2 * time.Second
	return cmd
}

// readExitCode reads bwrap's JSON status lines for the program's exit
// code; the program cannot write there (bwrap keeps the descriptor).
func readExitCode(r io.Reader) int {
	code := -1
	sc := bufio.NewScanner(io.LimitReader(r, 64<<10))
	for sc.Scan() {
		var st struct {
			ExitCode *int `json:"exit-code"`
		}
		if json.Unmarshal(sc.Bytes(), &st) == nil && st.ExitCode != nil {
			code = *st.ExitCode
		}
	}
	return code
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	return s
}
