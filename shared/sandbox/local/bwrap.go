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

// systemDirs are the host's top-level program directories. On merged-/usr
// systems they are symlinks into /usr and are recreated as such; otherwise
// they are bound read-only.
var systemDirs = []string{"/bin", "/sbin", "/lib", "/lib64", "/lib32", "/libx32"}

// etcFiles are the only parts of /etc the interpreters need (dynamic
// linker cache, alternatives symlinks, time zone). Nothing else of the
// host's configuration is visible.
var etcFiles = []string{"/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d", "/etc/alternatives", "/etc/localtime"}

// rootFSArgs builds the read-only system view, the same for every run.
func rootFSArgs(extraRO []string) []string {
	a := []string{"--ro-bind", "/usr", "/usr"}
	for _, d := range systemDirs {
		st, err := os.Lstat(d)
		switch {
		case err != nil:
		case st.Mode()&os.ModeSymlink != 0:
			if target, err := os.Readlink(d); err == nil {
				a = append(a, "--symlink", target, d)
			}
		case st.IsDir():
			a = append(a, "--ro-bind", d, d)
		}
	}
	for _, f := range etcFiles {
		a = append(a, "--ro-bind-try", f, f)
	}
	for _, d := range extraRO {
		a = append(a, "--ro-bind", d, d)
	}
	return a
}

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

// args is the whole bwrap command line of one run of argv in dir.
func (p *Provider) args(dir string, argv []string) []string {
	a := []string{
		// Every namespace: no network (a fresh, empty net namespace), no
		// host pids, ipc or hostname; a user namespace that may not nest.
		"--unshare-all", "--unshare-user", "--disable-userns",
		"--die-with-parent", // the run dies with us
		"--new-session",     // no TIOCSTI into a terminal of ours
		"--cap-drop", "ALL",
		"--hostname", "sandbox",
	}
	a = append(a, p.rootFS...)
	a = append(a,
		"--proc", "/proc",
		"--dev", "/dev",
		"--size", strconv.FormatInt(p.cfg.TmpBytes, 10), "--tmpfs", "/tmp",
		"--bind", dir, WorkDir,
		"--chdir", WorkDir,
		// The root bwrap builds is a tmpfs: freeze it, so that only the
		// working directory and /tmp take writes.
		"--remount-ro", "/",
		// Nothing of the host's environment: only what interpreters need.
		"--clearenv",
		"--setenv", "PATH", p.path,
		"--setenv", "HOME", WorkDir,
		"--setenv", "LANG", "C.UTF-8",
		"--setenv", "TMPDIR", "/tmp",
		"--json-status-fd", "3",
		"--",
		// Limits are set inside, on the program only: bwrap itself needs
		// more address space than we allow the code.
		p.cfg.Prlimit,
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

// run executes argv in a new sandbox over dir, feeding stdin. The run is
// killed, with its whole process group, when ctx is done; the error is
// then ctx's. Other errors mean bwrap could not be started.
func (p *Provider) run(ctx context.Context, dir string, argv []string, stdin string) (runResult, error) {
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

	cmd := exec.CommandContext(ctx, p.cfg.Bwrap, p.args(dir, argv)...)
	cmd.Env = []string{} // not even bwrap sees our environment
	cmd.Dir = "/"
	cmd.Stdin = strings.NewReader(stdin)
	cmd.Stdout = res.stdout
	cmd.Stderr = res.stderr
	cmd.ExtraFiles = []*os.File{statusW} // fd 3: --json-status-fd
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Setpgid:    true,
		Pdeathsig:  syscall.SIGKILL,
		Credential: p.cred,
	}
	// Kill the group, not just bwrap: with bwrap gone, --die-with-parent
	// takes the sandbox's init and so its whole pid namespace with it.
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 2 * time.Second

	start := time.Now()
	err = cmd.Start()
	statusW.Close() // ours; bwrap holds its own copy
	if err != nil {
		return res, fmt.Errorf("start bwrap: %w", err)
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
