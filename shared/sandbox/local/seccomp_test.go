package local

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"runtime"
	"strings"
	"syscall"
	"testing"

	"github.com/commonly/runtime/shared/sandbox"
)

// TestSeccompDenies calls every denied syscall from inside (with zero
// arguments: harmless without the filter too): each fails with EPERM,
// whatever it would have done, and an allowed call still works.
func TestSeccompDenies(t *testing.T) {
	arch, ok := seccompArches[runtime.GOARCH]
	if !ok {
		t.Skipf("no seccomp filter for %s", runtime.GOARCH)
	}
	var calls []string
	for _, d := range deniedSyscalls {
		if n := arch.nr(d); n != 0 {
			calls = append(calls, fmt.Sprintf("(%q, %d)", d.name, n))
		}
	}
	if arch.x32 != 0 {
		calls = append(calls, fmt.Sprintf("(%q, %d)", "x32 getpid", arch.x32|uint32(syscall.SYS_GETPID)))
	}
	s := newSession(t, Config{})
	got := run(t, s, sandbox.Python, `
import ctypes, json, os
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
out = {}
for name, nr in [`+strings.Join(calls, ", ")+`]:
    ctypes.set_errno(0)
    r = libc.syscall(ctypes.c_long(nr), 0, 0, 0, 0, 0, 0)
    out[name] = [r, ctypes.get_errno()]
out["getpid"] = [int(libc.syscall(ctypes.c_long(`+fmt.Sprint(syscall.SYS_GETPID)+`)) == os.getpid()), 0]
print(json.dumps(out))
`)
	var res map[string][2]int64
	if err := json.Unmarshal([]byte(got.Stdout), &res); err != nil {
		t.Fatalf("output %q (stderr %q): %v", got.Stdout, got.Stderr, err)
	}
	if len(res) != len(calls)+1 {
		t.Fatalf("%d results for %d calls", len(res), len(calls)+1)
	}
	for name, r := range res {
		switch {
		case name == "getpid":
			if r[0] != 1 {
				t.Errorf("getpid does not work under the filter")
			}
		case r[0] != -1 || r[1] != int64(syscall.EPERM):
			t.Errorf("%s returned %d, errno %d; want -1, EPERM", name, r[0], r[1])
		}
	}
}

// TestSeccompProgram runs the compiled filter for each architecture on a
// small classic-BPF interpreter: foreign architectures and the x32 ABI are
// refused whole, every listed call is refused, the rest allowed.
func TestSeccompProgram(t *testing.T) {
	for goarch, arch := range seccompArches {
		t.Run(goarch, func(t *testing.T) {
			prog, err := seccompFilter(goarch)
			if err != nil {
				t.Fatal(err)
			}
			deny := uint32(seccompRetErrno | uint32(syscall.EPERM))
			verdict := func(audit, nr uint32) uint32 { return runBPF(t, prog, nr, audit) }
			if got := verdict(0x40000003 /* i386 */, 0); got != deny {
				t.Errorf("i386 read: %#x, want deny", got)
			}
			denied := map[uint32]bool{}
			for _, d := range deniedSyscalls {
				if n := arch.nr(d); n != 0 {
					denied[n] = true
					if got := verdict(arch.audit, n); got != deny {
						t.Errorf("%s (%d): %#x, want deny", d.name, n, got)
					}
				}
			}
			for nr := uint32(0); nr < 500; nr++ {
				if got := verdict(arch.audit, nr); !denied[nr] && got != seccompRetAllow {
					t.Errorf("syscall %d: %#x, want allow", nr, got)
				}
			}
			if arch.x32 != 0 {
				if got := verdict(arch.audit, arch.x32|39); got != deny {
					t.Errorf("x32 getpid: %#x, want deny", got)
				}
			}
		})
	}
	if _, err := seccompFilter("mips"); err == nil {
		t.Error("a filter for an architecture without a table")
	}
}

// runBPF interprets the instructions seccompFilter emits.
func runBPF(t *testing.T, prog []byte, nr, arch uint32) uint32 {
	t.Helper()
	if len(prog)%8 != 0 {
		t.Fatalf("program of %d bytes", len(prog))
	}
	var acc uint32
	for pc := 0; pc < len(prog)/8; pc++ {
		in := prog[pc*8:]
		code, jt, jf, k := binary.NativeEndian.Uint16(in), int(in[2]), int(in[3]), binary.NativeEndian.Uint32(in[4:])
		switch code {
		case bpfLdWAbs:
			switch k {
			case offsetNr:
				acc = nr
			case offsetArch:
				acc = arch
			default:
				t.Fatalf("load of offset %d", k)
			}
		case bpfJeqK, bpfJgeK:
			if (code == bpfJeqK && acc == k) || (code == bpfJgeK && acc >= k) {
				pc += jt
			} else {
				pc += jf
			}
			if pc+1 >= len(prog)/8 {
				t.Fatalf("jump past the end at %d", pc)
			}
		case bpfRetK:
			return k
		default:
			t.Fatalf("unexpected instruction %#x", code)
		}
	}
	t.Fatal("ran off the end of the program")
	return 0
}
