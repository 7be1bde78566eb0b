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
// reach: the session's files, /tmp and /dev/shm each stop at their share
// (ENOSPC), and nothing else takes a byte.
func TestWritableSpaceBounded(t *testing.T) {
	s := newSession(t, Config{})
	budget := int64(DefaultWritableBytes)
	got := run(t, s, sandbox.Python, fmt.Sprintf(fillCode, budget+32<<20))
	var took map[string][2]int64
	if err := json.Unmarshal([]byte(got.Stdout), &took); err != nil {
		t.Fatalf("output %q (stderr %q): %v", got.Stdout, got.Stderr, err)
	}
	share := map[string]int64{"/home/user": budget / 2, "/tmp": budget / 4, "/dev/shm": budget / 4}
	var total int64
	for dir, r := range took {
		n, errno := r[0], r[1]
		total += n
		want, writable := share[dir]
		switch {
		case !writable && (n != 0 || errno != 30): // EROFS
			t.Errorf("%s: wrote %d bytes (errno %d), want read-only", dir, n, errno)
		case writable && (n > want || n < want-(1<<20) || errno != 28): // ENOSPC
			t.Errorf("%s: wrote %d MiB (errno %d), want %d MiB then ENOSPC", dir, n>>20, errno, want>>20)
		}
	}
	if total > budget {
		t.Errorf("wrote %d MiB in all, budget %d MiB", total>>20, budget>>20)
	}
}

// TestWritableMounts reads the run's mount table: the only writable file
// systems are the three bounded tmpfs, sized from WritableBytes, besides
// /proc, /dev/pts and the device nodes.
func TestWritableMounts(t *testing.T) {
	const budget = 8 << 20
	s := newSession(t, Config{WritableBytes: budget})
	got := run(t, s, sandbox.Python, `
import json
mounts = []
for line in open("/proc/self/mountinfo"):
    pre, post = line.split(" - ")
    f, g = pre.split(), post.split()
    mounts.append({"at": f[4], "opts": f[5], "fs": g[0], "super": g[2]})
print(json.dumps(mounts))
`)
	var mounts []struct{ At, Opts, FS, Super string }
	if err := json.Unmarshal([]byte(got.Stdout), &mounts); err != nil {
		t.Fatalf("output %q: %v", got.Stdout, err)
	}
	want := map[string]int64{"/home/user": budget / 2, "/tmp": budget / 4, "/dev/shm": budget / 4}
	devices := map[string]bool{"/dev/null": true, "/dev/zero": true, "/dev/full": true, "/dev/random": true, "/dev/urandom": true, "/dev/tty": true}
	seen := map[string]bool{}
	for _, m := range mounts {
		if strings.HasPrefix(m.Opts, "ro") {
			continue
		}
		switch {
		case m.FS == "proc" && m.At == "/proc", m.FS == "devpts" && m.At == "/dev/pts", devices[m.At]:
		case m.FS == "tmpfs" && want[m.At] != 0:
			seen[m.At] = true
			if size := tmpfsSize(m.Super); size != want[m.At] {
				t.Errorf("%s: tmpfs of %d bytes, want %d", m.At, size, want[m.At])
			}
		default:
			t.Errorf("writable mount %+v", m)
		}
	}
	if len(seen) != len(want) {
		t.Errorf("bounded tmpfs seen at %v, want %v", seen, want)
	}
}

func tmpfsSize(opts string) int64 {
	for _, o := range strings.Split(opts, ",") {
		if v, ok := strings.CutPrefix(o, "size="); ok {
			n, _ := strconv.ParseInt(strings.TrimSuffix(v, "k"), 10, 64)
			return n << 10
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
