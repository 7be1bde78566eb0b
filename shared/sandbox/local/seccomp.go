package local

import (
	"encoding/binary"
	"fmt"
	"runtime"
	"syscall"
)

// deniedSyscall is a system call that no Python or Node run needs (none
// appears in strace of either interpreter's standard library at work) and
// that either widens the kernel's attack surface, reaches outside the run,
// or bypasses the writable-space budget. The numbers are the kernel's
// (arch/x86/entry/syscalls/syscall_64.tbl, include/uapi/asm-generic/
// unistd.h); 0 means the call does not exist on that architecture.
type deniedSyscall struct {
	name         string
	amd64, arm64 uint32
}

var deniedSyscalls = []deniedSyscall{
	// Other processes: reading or changing their memory, stealing their
	// descriptors.
	{"ptrace", 101, 117},
	{"process_vm_readv", 310, 270},
	{"process_vm_writev", 311, 271},
	{"pidfd_getfd", 438, 438},
	{"kcmp", 312, 272},
	// Namespaces and mounts: the sandbox's shape is bubblewrap's to set.
	{"unshare", 272, 97},
	{"setns", 308, 268},
	{"mount", 165, 40},
	{"umount2", 166, 39},
	{"pivot_root", 155, 41},
	{"chroot", 161, 51},
	{"open_tree", 428, 428},
	{"move_mount", 429, 429},
	{"fsopen", 430, 430},
	{"fsconfig", 431, 431},
	{"fsmount", 432, 432},
	{"fspick", 433, 433},
	{"mount_setattr", 442, 442},
	// The kernel keyring is not namespaced.
	{"keyctl", 250, 219},
	{"add_key", 248, 217},
	{"request_key", 249, 218},
	// Kernel attack surface behind most recent local privilege escalations.
	{"bpf", 321, 280},
	{"perf_event_open", 298, 241},
	{"userfaultfd", 323, 282},
	{"io_uring_setup", 425, 425},
	{"io_uring_enter", 426, 426},
	{"io_uring_register", 427, 427},
	// Memory outside every tmpfs: anonymous files and System V segments
	// would bypass the writable-space budget.
	{"memfd_create", 319, 279},
	{"memfd_secret", 447, 447},
	{"shmget", 29, 194},
	{"shmat", 30, 196},
	{"shmctl", 31, 195},
	// The machine's administration (refused without capabilities anyway).
	{"kexec_load", 246, 104},
	{"kexec_file_load", 320, 294},
	{"init_module", 175, 105},
	{"finit_module", 313, 273},
	{"delete_module", 176, 106},
	{"reboot", 169, 142},
	{"swapon", 167, 224},
	{"swapoff", 168, 225},
	{"acct", 163, 89},
	{"settimeofday", 164, 170},
	{"clock_settime", 227, 112},
	{"clock_adjtime", 305, 266},
	{"adjtimex", 159, 171},
	{"syslog", 103, 116},
	{"quotactl", 179, 60},
	{"quotactl_fd", 443, 443},
	{"iopl", 172, 0},
	{"ioperm", 173, 0},
	{"vhangup", 153, 58},
	{"lookup_dcookie", 212, 18},
	{"name_to_handle_at", 303, 264},
	{"open_by_handle_at", 304, 265},
	{"fanotify_init", 300, 262},
}

// seccompArch is the audit architecture a filter accepts and the column of
// deniedSyscalls it uses.
type seccompArch struct {
	audit uint32
	nr    func(deniedSyscall) uint32
	// x32 marks the x32 ABI's numbers, which share the x86-64 audit arch.
	x32 uint32
}

var seccompArches = map[string]seccompArch{
	"amd64": {audit: 0xC000003E, nr: func(d deniedSyscall) uint32 { return d.amd64 }, x32: 0x40000000},
	"arm64": {audit: 0xC00000B7, nr: func(d deniedSyscall) uint32 { return d.arm64 }},
}

// Classic BPF as seccomp reads it (linux/filter.h, linux/seccomp.h).
const (
	bpfLdWAbs = 0x20 // BPF_LD | BPF_W | BPF_ABS
	bpfJeqK   = 0x15 // BPF_JMP | BPF_JEQ | BPF_K
	bpfJgeK   = 0x35 // BPF_JMP | BPF_JGE | BPF_K
	bpfRetK   = 0x06 // BPF_RET | BPF_K

	seccompRetAllow = 0x7fff0000
	seccompRetErrno = 0x00050000

	offsetNr   = 0 // struct seccomp_data.nr
	offsetArch = 4 // struct seccomp_data.arch
)

type bpfInsn struct {
	code   uint16
	jt, jf uint8
	k      uint32
}

// seccompFilter is the compiled program bubblewrap's --seccomp reads: a
// deny list that answers EPERM, so that interpreters see an ordinary
// permission error rather than dying. Any other architecture's calls (a
// 32-bit int 0x80, the x32 ABI) are refused whole: their numbers differ.
// The program only looks at the architecture and the number, so the
// kernel caches its verdict per syscall and an allowed call costs nothing.
func seccompFilter(goarch string) ([]byte, error) {
	arch, ok := seccompArches[goarch]
	if !ok {
		return nil, fmt.Errorf("no seccomp filter for %s", goarch)
	}
	deny := seccompRetErrno | uint32(syscall.EPERM)
	var nrs []uint32
	for _, d := range deniedSyscalls {
		if n := arch.nr(d); n != 0 {
			nrs = append(nrs, n)
		}
	}
	// Layout: arch check, number load, [x32 check], one JEQ per denied
	// number, ALLOW, DENY. Jumps are relative to the next instruction.
	prog := []bpfInsn{
		{code: bpfLdWAbs, k: offsetArch},
		{code: bpfJeqK, jt: 1, jf: 0, k: arch.audit},
		{code: bpfRetK, k: deny},
		{code: bpfLdWAbs, k: offsetNr},
	}
	if len(nrs)+1 > 255 {
		return nil, fmt.Errorf("seccomp filter too long for 8-bit jumps: %d calls", len(nrs))
	}
	if arch.x32 != 0 {
		// Over every JEQ and ALLOW, to DENY.
		prog = append(prog, bpfInsn{code: bpfJgeK, jt: uint8(len(nrs) + 1), k: arch.x32})
	}
	for i, n := range nrs {
		// Over the JEQs after this one and ALLOW, to DENY.
		prog = append(prog, bpfInsn{code: bpfJeqK, jt: uint8(len(nrs) - i), k: n})
	}
	prog = append(prog, bpfInsn{code: bpfRetK, k: seccompRetAllow}, bpfInsn{code: bpfRetK, k: deny})

	out := make([]byte, 0, 8*len(prog))
	for _, in := range prog {
		out = binary.NativeEndian.AppendUint16(out, in.code)
		out = append(out, in.jt, in.jf)
		out = binary.NativeEndian.AppendUint32(out, in.k)
	}
	return out, nil
}

// hostSeccompFilter is the filter for the machine we run on.
func hostSeccompFilter() ([]byte, error) { return seccompFilter(runtime.GOARCH) }
