package local

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// homePrefix names the sessions' mount points in BaseDir; a mount point
// being made carries a leading dot until it is locked.
const homePrefix = "commonly-sandbox-"

// home is a session's /home/user: a size-limited tmpfs mounted over an
// empty directory of BaseDir in a mount namespace of its own, which no
// process runs in. Runs enter that namespace (nsenter) to start bwrap, so
// they can bind the tmpfs; holding the namespaces' descriptors keeps it
// and its files alive across runs, and closing them (Kill), or this
// process dying, frees it. The user's files never reach the host's disk,
// and can never outgrow the budget.
type home struct {
	// dir is the mount point on the host: empty, locked (flock) while
	// the session lives, so that a provider starting beside us knows it
	// is not stale.
	dir    string
	lock   *os.File
	userNS *os.File
	mntNS  *os.File
}

// newHome makes the mount point and the namespace holding the tmpfs.
func (p *Provider) newHome(ctx context.Context) (*home, error) {
	h := &home{}
	var err error
	if h.dir, h.lock, err = p.lockedDir(); err != nil {
		return nil, err
	}
	if err := p.mountHome(ctx, h); err != nil {
		h.close()
		return nil, err
	}
	return h, nil
}

// lockedDir creates the mount point, owned by the identity runs take,
// and locks it before giving it the name removeStaleHomes looks for.
func (p *Provider) lockedDir() (string, *os.File, error) {
	tmp, err := os.MkdirTemp(p.cfg.BaseDir, "."+homePrefix)
	if err != nil {
		return "", nil, fmt.Errorf("create session directory: %w", err)
	}
	lock, err := os.Open(tmp)
	if err == nil {
		err = syscall.Flock(int(lock.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
	}
	if err == nil && p.cred != nil {
		err = os.Chown(tmp, int(p.cred.Uid), int(p.cred.Gid))
	}
	dir := filepath.Join(p.cfg.BaseDir, strings.TrimPrefix(filepath.Base(tmp), "."))
	if err == nil {
		err = os.Rename(tmp, dir)
	}
	if err != nil {
		if lock != nil {
			lock.Close()
		}
		os.Remove(tmp)
		return "", nil, fmt.Errorf("prepare session directory: %w", err)
	}
	return dir, lock, nil
}

// mountHome starts a bwrap whose only job is to make the namespace: a
// user namespace (so that an unprivileged uid may mount), a mount
// namespace seeing the host's tree with the tmpfs over h.dir. It blocks
// before running anything while we take its namespaces' descriptors,
// then exits; the namespace lives on through them.
func (p *Provider) mountHome(ctx context.Context, h *home) error {
	statusR, statusW, err := os.Pipe()
	if err != nil {
		return err
	}
	defer statusR.Close()
	blockR, blockW, err := os.Pipe()
	if err != nil {
		statusW.Close()
		return err
	}
	defer blockW.Close()
	truePath := p.cfg.Prlimit // any program that exits 0 at once
	cmd := execCommand(ctx, p.cfg.Bwrap,
		"--unshare-user",
		"--bind", "/", "/",
		"--size", strconv.FormatInt(p.homeBytes(), 10), "--perms", "0700", "--tmpfs", h.dir,
		"--json-status-fd", "3",
		"--block-fd", "4",
		"--", truePath, "--version")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	cmd.ExtraFiles = []*os.File{statusW, blockR}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL, Credential: p.cred}
	err = cmd.Start()
	statusW.Close()
	blockR.Close()
	if err != nil {
		return fmt.Errorf("start bwrap: %w", err)
	}
	status := bufio.NewReader(io.LimitReader(statusR, 64<<10))
	started, err := readStatus(status)
	if err == nil {
		err = h.openNamespaces(started)
	}
	blockW.Close() // let it finish: exec and exit
	waitErr := cmd.Wait()
	if err != nil {
		return fmt.Errorf("mount session tmpfs: %w: %s", err, firstLine(stderr.String()))
	}
	if exited, err := readStatus(status); err != nil || exited.ExitCode == nil || *exited.ExitCode != 0 {
		return fmt.Errorf("mount session tmpfs: bwrap did not finish its set-up (%v): %s", waitErr, firstLine(stderr.String()))
	}
	return nil
}

// bwrapStatus is one line of bwrap's --json-status-fd.
type bwrapStatus struct {
	ChildPID *int    `json:"child-pid"`
	MountNS  *uint64 `json:"mnt-namespace"`
	ExitCode *int    `json:"exit-code"`
}

func readStatus(r *bufio.Reader) (bwrapStatus, error) {
	var st bwrapStatus
	line, err := r.ReadBytes('\n')
	if len(line) == 0 && err != nil {
		return st, fmt.Errorf("bwrap status: %w", err)
	}
	if err := json.Unmarshal(line, &st); err != nil {
		return st, fmt.Errorf("bwrap status %q: %w", line, err)
	}
	return st, nil
}

// openNamespaces takes the blocked child's namespaces, checking that the
// pid still names the process bwrap reported.
func (h *home) openNamespaces(st bwrapStatus) error {
	if st.ChildPID == nil || st.MountNS == nil {
		return errors.New("bwrap did not report its child")
	}
	dir := "/proc/" + strconv.Itoa(*st.ChildPID) + "/ns/"
	var err error
	if h.userNS, err = os.Open(dir + "user"); err != nil {
		return err
	}
	if h.mntNS, err = os.Open(dir + "mnt"); err != nil {
		return err
	}
	var fi syscall.Stat_t
	if err := syscall.Fstat(int(h.mntNS.Fd()), &fi); err != nil {
		return err
	}
	if fi.Ino != *st.MountNS {
		return errors.New("bwrap's child vanished before its namespaces were taken")
	}
	return nil
}

// nsenterArgs are the arguments that put a run in the home's namespaces.
// nsenter opens them through our descriptor table, so that no descriptor
// of ours reaches the sandbox. As root it switches to the run's identity
// once inside; otherwise it keeps ours, which owns the namespaces.
func (h *home) nsenterArgs(cred *syscall.Credential) []string {
	self := "/proc/" + strconv.Itoa(os.Getpid()) + "/fd/"
	a := []string{
		"--user=" + self + strconv.Itoa(int(h.userNS.Fd())),
		"--mount=" + self + strconv.Itoa(int(h.mntNS.Fd())),
	}
	if cred != nil {
		return append(a, "--setuid", strconv.Itoa(int(cred.Uid)), "--setgid", strconv.Itoa(int(cred.Gid)))
	}
	return append(a, "--preserve-credentials")
}

// close frees the tmpfs and the user's files with it, and removes the
// mount point. It is idempotent.
func (h *home) close() {
	for _, f := range []**os.File{&h.mntNS, &h.userNS} {
		if *f != nil {
			(*f).Close()
			*f = nil
		}
	}
	if h.dir != "" {
		// Nothing was ever written there; RemoveAll in case that changes.
		os.RemoveAll(h.dir)
		h.dir = ""
	}
	if h.lock != nil {
		h.lock.Close()
		h.lock = nil
	}
}

// homeBytes, tmpBytes and shmBytes split the writable budget.
func (p *Provider) homeBytes() int64 { return p.cfg.WritableBytes / 2 }
func (p *Provider) tmpBytes() int64  { return p.cfg.WritableBytes / 4 }
func (p *Provider) shmBytes() int64 {
	return p.cfg.WritableBytes - p.homeBytes() - p.tmpBytes()
}

// removeStaleHomes removes the mount points in base that no live session
// holds locked: those of a process that crashed or was killed (files of
// older versions, which kept them on disk, go with them). Only real
// directories owned by one of owners are touched.
func removeStaleHomes(base string, owners []int) (removed int) {
	entries, err := os.ReadDir(base)
	if err != nil {
		return 0
	}
	for _, e := range entries {
		if !e.IsDir() || !strings.HasPrefix(e.Name(), homePrefix) {
			continue
		}
		path := filepath.Join(base, e.Name())
		var st syscall.Stat_t
		if syscall.Lstat(path, &st) != nil || st.Mode&syscall.S_IFMT != syscall.S_IFDIR || !ownedBy(st.Uid, owners) {
			continue
		}
		f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_DIRECTORY, 0)
		if err != nil {
			continue
		}
		if syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) == nil {
			if os.RemoveAll(path) == nil {
				removed++
			}
		}
		f.Close()
	}
	return removed
}

func ownedBy(uid uint32, owners []int) bool {
	for _, o := range owners {
		if int(uid) == o {
			return true
		}
	}
	return false
}
