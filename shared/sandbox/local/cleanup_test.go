package local

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/commonly/runtime/shared/sandbox"
)

// TestStaleHomesRemoved: a provider starting removes the session
// directories nobody holds (a crashed process's, with the user's files
// older versions kept there) and leaves a live session's alone, as well
// as anything that is not a session directory.
func TestStaleHomesRemoved(t *testing.T) {
	base := baseDir(t)
	live := create(t, newProvider(t, Config{BaseDir: base}))
	run(t, live, sandbox.Python, "open('kept.txt', 'w').write('x')")

	stale := filepath.Join(base, fsPrefix+"crashed")
	other := filepath.Join(base, "not-a-session")
	target := t.TempDir()
	for _, d := range []string{stale, other} {
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(d, "user-file.txt"), []byte("secret"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(target, "keep.txt"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(base, fsPrefix+"link")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}

	New(Config{BaseDir: base})

	if _, err := os.Stat(stale); !os.IsNotExist(err) {
		t.Errorf("stale session directory survives a provider start: %v", err)
	}
	for _, keep := range []string{live.Dir(), other, link, filepath.Join(target, "keep.txt")} {
		if _, err := os.Lstat(keep); err != nil {
			t.Errorf("%s removed: %v", keep, err)
		}
	}
	if got := run(t, live, sandbox.Python, "print(open('kept.txt').read())"); got.Stdout != "x\n" {
		t.Errorf("live session after another provider started: %q", got.Stdout)
	}
}

// crashHelperEnv makes the test binary a process that creates a session,
// writes a file in it, says where, and waits to be killed.
const crashHelperEnv = "LOCAL_SANDBOX_CRASH_BASE"

// TestCrashLeavesNoFiles kills a process holding a session with SIGKILL
// (no Kill, no deferred clean-up): none of the user's files is on the
// host's disk, and the next provider removes the empty mount point.
func TestCrashLeavesNoFiles(t *testing.T) {
	if base := os.Getenv(crashHelperEnv); base != "" {
		crashHelper(base)
		return
	}
	if _, err := exec.LookPath("bwrap"); err != nil {
		t.Skip("bwrap is not installed (apt-get install bubblewrap): the local sandbox cannot be tested")
	}
	base := baseDir(t)
	cmd := exec.Command(os.Args[0], "-test.run=^TestCrashLeavesNoFiles$")
	cmd.Env = append(os.Environ(), crashHelperEnv+"="+base)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	_ = cmd.Process.Signal(syscall.SIGKILL)
	_ = cmd.Wait()
	dir, ok := strings.CutPrefix(strings.TrimSpace(line), "ready ")
	if err != nil || !ok {
		t.Fatalf("helper said %q (%v)", line, err)
	}

	var files []string
	_ = filepath.WalkDir(base, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			files = append(files, p)
		}
		return nil
	})
	if len(files) > 0 {
		t.Errorf("after the crash the host holds %v", files)
	}
	New(Config{BaseDir: base})
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("the crashed session's directory survives the next provider start: %v", err)
	}
}

func crashHelper(base string) {
	s, err := New(Config{BaseDir: base}).Create(context.Background(), sandbox.Meta{})
	if err == nil {
		_, err = s.Execute(context.Background(), sandbox.Python, "open('user-file.txt', 'w').write('secret' * 100000)")
	}
	if err != nil {
		fmt.Println("error", err)
		os.Exit(1)
	}
	fmt.Println("ready", s.(*Session).Dir())
	wait := make(chan os.Signal, 1)
	signal.Notify(wait, syscall.SIGTERM)
	<-wait // SIGKILL comes first
}
