package local

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/commonly/runtime/shared/sandbox"
)

// unprivilegedEnv makes the test binary run a session as an ordinary user.
const unprivilegedEnv = "LOCAL_SANDBOX_UNPRIVILEGED_BASE"

// TestUnprivileged runs a session from a process that is not root, as a
// developer's `make run` is: nsenter keeps our uid, which is the
// namespaces' root. (Run as root, the rest of the tests take the other
// path.)
func TestUnprivileged(t *testing.T) {
	if base := os.Getenv(unprivilegedEnv); base != "" {
		unprivilegedHelper(base)
		return
	}
	if os.Geteuid() != 0 {
		t.Skip("not root: every other test already runs unprivileged")
	}
	newProvider(t, Config{}) // skips without bwrap
	dir := baseDir(t)
	bin := filepath.Join(dir, "local.test")
	copyFile(t, os.Args[0], bin)
	base := filepath.Join(dir, "base")
	if err := os.Mkdir(base, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(base, nobody, nobody); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "-test.run=^TestUnprivileged$")
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), unprivilegedEnv + "=" + base}
	cmd.Dir = "/"
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: nobody, Gid: nobody, Groups: []uint32{}}}
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "persisted kept, uid 65534, home []\n") {
		t.Errorf("unprivileged session: %v\n%s", err, out)
	}
	if entries, _ := os.ReadDir(base); len(entries) != 0 {
		t.Errorf("left %d entries in BaseDir", len(entries))
	}
}

func unprivilegedHelper(base string) {
	fail := func(err error) {
		fmt.Println("error:", err)
		os.Exit(1)
	}
	p := New(Config{BaseDir: base})
	s, err := p.Create(context.Background(), sandbox.Meta{})
	if err != nil {
		fail(err)
	}
	defer s.Kill(context.Background())
	if _, err := s.Execute(context.Background(), sandbox.Python, "open('f', 'w').write('kept')"); err != nil {
		fail(err)
	}
	got, err := s.Execute(context.Background(), sandbox.Python, "import os; print(open('f').read(), os.getuid())")
	if err != nil {
		fail(err)
	}
	host, _ := os.ReadDir(s.(*Session).Dir())
	var content, uid string
	_, _ = fmt.Sscan(got.Stdout, &content, &uid)
	fmt.Printf("persisted %s, uid %s, home %v\n", content, uid, host)
	if err := s.Kill(context.Background()); err != nil {
		fail(err)
	}
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	in, err := os.Open(from)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	out, err := os.OpenFile(to, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
}
