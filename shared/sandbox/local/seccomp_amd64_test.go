package local

import (
	"syscall"
	"testing"
)

// TestSyscallNumbersAMD64 checks the table against the standard library's
// numbers, for the calls it knows.
func TestSyscallNumbersAMD64(t *testing.T) {
	std := map[string]uint32{
		"ptrace": syscall.SYS_PTRACE, "unshare": syscall.SYS_UNSHARE, "mount": syscall.SYS_MOUNT,
		"umount2": syscall.SYS_UMOUNT2, "pivot_root": syscall.SYS_PIVOT_ROOT, "chroot": syscall.SYS_CHROOT,
		"keyctl": syscall.SYS_KEYCTL, "add_key": syscall.SYS_ADD_KEY, "request_key": syscall.SYS_REQUEST_KEY,
		"perf_event_open": syscall.SYS_PERF_EVENT_OPEN, "shmget": syscall.SYS_SHMGET, "shmat": syscall.SYS_SHMAT,
		"shmctl": syscall.SYS_SHMCTL, "kexec_load": syscall.SYS_KEXEC_LOAD, "init_module": syscall.SYS_INIT_MODULE,
		"delete_module": syscall.SYS_DELETE_MODULE, "reboot": syscall.SYS_REBOOT, "swapon": syscall.SYS_SWAPON,
		"swapoff": syscall.SYS_SWAPOFF, "acct": syscall.SYS_ACCT, "settimeofday": syscall.SYS_SETTIMEOFDAY,
		"clock_settime": syscall.SYS_CLOCK_SETTIME, "adjtimex": syscall.SYS_ADJTIMEX, "syslog": syscall.SYS_SYSLOG,
		"quotactl": syscall.SYS_QUOTACTL, "iopl": syscall.SYS_IOPL, "ioperm": syscall.SYS_IOPERM,
		"vhangup": syscall.SYS_VHANGUP, "lookup_dcookie": syscall.SYS_LOOKUP_DCOOKIE,
		"fanotify_init": syscall.SYS_FANOTIFY_INIT,
	}
	checked := 0
	for _, d := range deniedSyscalls {
		if want, ok := std[d.name]; ok {
			checked++
			if d.amd64 != want {
				t.Errorf("%s: %d, the standard library says %d", d.name, d.amd64, want)
			}
		}
	}
	if checked != len(std) {
		t.Errorf("checked %d of %d", checked, len(std))
	}
}
