package local

import (
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/commonly/runtime/shared/sandbox"
)

// fillCode writes 8 MiB files (under RLIMIT_FSIZE) into each directory
// until the kernel refuses or limit bytes are written, and prints what
// each took as JSON: {"dir": [bytes, errno]}.
const fillCode = `
import json, os
def fill(d, limit):
    n, i = 0, 0
    while n < limit:
        try:
            fd = os.open(f"{d}/fill{i}", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        except OSError as e:
            return n, e.errno
        try:
            for _ in range(8):
                n += os.write(fd, b"\0" * (1 << 20))
        except OSError as e:
            return n, e.errno
        finally:
            os.close(fd)
        i += 1
    return n, 0
print(json.dumps({d: fill(d, %d) for d in ["/home/user", "/tmp", "/dev/shm", "/dev", "/", "/usr"]}))
`

// TestWritableSpaceBounded writes past the budget everywhere code can
// reach: the session's files, /tmp and /dev/shm share one budget and stop
// there (ENOSPC), and nothing else takes a byte.
func TestWritableSpaceBounded(t *testing.T) {
	s := newSession(t, Config{})
	budget := int64(DefaultWritableBytes)
	got := run(t, s, sandbox.Python, fmt.Sprintf(fillCode, budget+32<<20))
	var took map[string][2]int64
	if err := json.Unmarshal([]byte(got.Stdout), &took); err != nil {
		t.Fatalf("output %q (stderr %q): %v", got.Stdout, got.Stderr, err)
	}
	var total int64
	for dir, r := range took {
		n, errno := r[0], r[1]
		total += n
		switch dir {
		case "/home/user", "/tmp", "/dev/shm":
			if errno != 28 { // ENOSPC
				t.Errorf("%s: wrote %d MiB, then errno %d; want ENOSPC", dir, n>>20, errno)
			}
		default:
			if n != 0 || errno != 30 { // EROFS
				t.Errorf("%s: wrote %d bytes (errno %d), want read-only", dir, n, errno)
			}
		}
	}
	if total > budget || total < budget-1<<20 {
		t.Errorf("wrote %d MiB in all, want the budget, %d MiB", total>>20, budget>>20)
	}
}

// TestWritableFilesBounded: the inodes are bounded too (kernel memory the
// byte budget does not count).
func TestWritableFilesBounded(t *testing.T) {
	const maxFiles = 1000
	s := newSession(t, Config{MaxFiles: maxFiles})
	got := run(t, s, sandbox.Python, `
import os
n = 0
try:
    while True:
        os.close(os.open(f"/tmp/f{n}", os.O_CREAT | os.O_WRONLY, 0o600))
        n += 1
except OSError as e:
    print(n, e.errno)
`)
	var n, errno int
	if _, err := fmt.Sscan(got.Stdout, &n, &errno); err != nil {
		t.Fatalf("output %q (stderr %q): %v", got.Stdout, got.Stderr, err)
	}
	if n > maxFiles || n < maxFiles-10 || errno != 28 {
		t.Errorf("created %d files, then errno %d; want about %d, then ENOSPC", n, errno, maxFiles)
	}
}

// TestWritableMounts reads the run's mount table: the only writable file
// system is the session's tmpfs, sized from WritableBytes and MaxFiles,
// at /home/user, /tmp and /dev/shm, besides /proc, /dev/pts and the
// device nodes.
func TestWritableMounts(t *testing.T) {
	const budget, files = 8 << 20, 5000
	s := newSession(t, Config{WritableBytes: budget, MaxFiles: files})
	got := run(t, s, sandbox.Python, `
import json
mounts = []
for line in open("/proc/self/mountinfo"):
    pre, post = line.split(" - ")
    f, g = pre.split(), post.split()
    mounts.append({"dev": f[2], "at": f[4], "opts": f[5], "fs": g[0], "super": g[2]})
print(json.dumps(mounts))
`)
	var mounts []struct{ Dev, At, Opts, FS, Super string }
	if err := json.Unmarshal([]byte(got.Stdout), &mounts); err != nil {
		t.Fatalf("output %q: %v", got.Stdout, err)
	}
	devices := map[string]bool{"/dev/null": true, "/dev/zero": true, "/dev/full": true, "/dev/random": true, "/dev/urandom": true, "/dev/tty": true}
	session := map[string]string{} // mount point -> device
	for _, m := range mounts {
		if strings.HasPrefix(m.Opts, "ro") {
			continue
		}
		switch {
		case m.FS == "proc" && m.At == "/proc", m.FS == "devpts" && m.At == "/dev/pts", devices[m.At]:
		case m.FS == "tmpfs" && (m.At == "/home/user" || m.At == "/tmp" || m.At == "/dev/shm"):
			session[m.At] = m.Dev
			if size, inodes := tmpfsOption(m.Super, "size"), tmpfsOption(m.Super, "nr_inodes"); size != budget>>10 || inodes != files {
				t.Errorf("%s: tmpfs of %d KiB and %d inodes, want %d and %d", m.At, size, inodes, budget>>10, files)
			}
		default:
			t.Errorf("writable mount %+v", m)
		}
	}
	if len(session) != 3 || session["/tmp"] != session["/home/user"] || session["/dev/shm"] != session["/home/user"] {
		t.Errorf("writable tmpfs %v, want one at /home/user, /tmp and /dev/shm", session)
	}
}

// tmpfsOption is a numeric option of a mount ("size=8192k" is 8192).
func tmpfsOption(opts, name string) int64 {
	for _, o := range strings.Split(opts, ",") {
		if v, ok := strings.CutPrefix(o, name+"="); ok {
			n, _ := strconv.ParseInt(strings.TrimSuffix(v, "k"), 10, 64)
			return n
		}
	}
	return -1
}

// TestHomeIsPerSession: a session's files persist across its runs, are
// invisible to another session, and die with it.
func TestHomeIsPerSession(t *testing.T) {
	p := newProvider(t, Config{})
	a, b := create(t, p), create(t, p)
	run(t, a, sandbox.Python, "open('mine.txt', 'w').write('a')")
	if got := run(t, a, sandbox.JavaScript, "console.log(require('fs').readFileSync('mine.txt', 'utf8'))"); got.Stdout != "a\n" {
		t.Errorf("second run of a: %q", got.Stdout)
	}
	if got := run(t, b, sandbox.Python, "import os; print(os.listdir('.'))"); got.Stdout != "[]\n" {
		t.Errorf("b sees %q", got.Stdout)
	}
	dir := a.Dir()
	if err := a.Kill(t.Context()); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("mount point remains after Kill: %v", err)
	}
}
