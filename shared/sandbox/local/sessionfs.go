package local

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// fsPrefix names the sessions' mount points in BaseDir; a mount point
// being made carries a leading dot until it is locked.
const fsPrefix = "commonly-sandbox-"

// The directories of a session's tmpfs, bound at /home/user, /tmp and
// /dev/shm in every run.
const (
	fsHome = "home"
	fsTmp  = "tmp"
	fsShm  = "shm"
)

// sessionFS is all a session may write: one tmpfs, of WritableBytes and
// MaxFiles inodes, holding its /home/user, /tmp and /dev/shm. It is
// mounted over an empty directory of BaseDir in a user and mount
// namespace of their own, which no process runs in. Runs enter them
// (nsenter) to start bwrap, so they can bind the tmpfs; holding the
// namespaces' descriptors keeps it and its files alive across runs, and
// closing them (Kill), or this process dying, frees it. The user's files
// never reach the host's disk and cannot outgrow the budget.
type sessionFS struct {
	// dir is the mount point on the host: empty, locked (flock) while
	// the session lives, so that a provider starting beside us knows it
	// is not stale.
	dir    string
	lock   *os.File
	userNS *os.File
	mntNS  *os.File
}

// newSessionFS makes the mount point and the namespaces holding the tmpfs.
func (p *Provider) newSessionFS(ctx context.Context) (*sessionFS, error) {
	fs := &sessionFS{}
	var err error
	if fs.dir, fs.lock, err = p.lockedDir(); err != nil {
		return nil, err
	}
	if err := p.mountSessionFS(ctx, fs); err != nil {
		fs.close()
		return nil, err
	}
	return fs, nil
}

// lockedDir creates the mount point, owned by the identity the sandbox
// takes, and locks it before giving it the name removeStaleSessionFS
// looks for.
func (p *Provider) lockedDir() (string, *os.File, error) {
	tmp, err := os.MkdirTemp(p.cfg.BaseDir, "."+fsPrefix)
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

// mountScript runs in the new namespaces as their root: it mounts the
// tmpfs (bwrap's own --tmpfs cannot cap inodes), makes its directories,
// says so, and waits for us to take the namespaces.
const mountScript = `"$1" -t tmpfs -o "$3" tmpfs "$4" &&
"$2" -m 0700 "$4/` + fsHome + `" && "$2" -m 1777 "$4/` + fsTmp + `" "$4/` + fsShm + `" &&
echo ready && read _`

// mountSessionFS makes the namespaces: a user namespace in which the
// sandbox's identity is root (so it may mount), and a mount namespace, a
// private copy of the host's, with the tmpfs over fs.dir.
func (p *Provider) mountSessionFS(ctx context.Context, fs *sessionFS) error {
	opts := fmt.Sprintf("size=%d,nr_inodes=%d,mode=0755", p.cfg.WritableBytes, p.cfg.MaxFiles)
	cmd := execCommand(ctx, p.tools.unshare,
		"--user", "--map-root-user", "--mount", "--propagation", "private",
		p.tools.sh, "-c", mountScript, "sh", p.tools.mount, p.tools.mkdir, opts, fs.dir)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return err
	}
	defer stdin.Close()
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL, Credential: p.cred}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start unshare: %w", err)
	}
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err == nil && line != "ready\n" {
		err = fmt.Errorf("unexpected %q", line)
	}
	if err == nil {
		// The shell waits in read: its pid is still its own.
		err = fs.openNamespaces(cmd.Process.Pid)
	}
	stdin.Close() // the shell ends; the namespaces live on
	waitErr := cmd.Wait()
	if err != nil {
		return fmt.Errorf("mount session tmpfs: %w (%v): %s", err, waitErr, firstLine(stderr.String()))
	}
	return nil
}

// openNamespaces takes the namespaces of pid, which must not be ours.
func (fs *sessionFS) openNamespaces(pid int) error {
	dir := "/proc/" + strconv.Itoa(pid) + "/ns/"
	var err error
	if fs.userNS, err = os.Open(dir + "user"); err != nil {
		return err
	}
	if fs.mntNS, err = os.Open(dir + "mnt"); err != nil {
		return err
	}
	var theirs, ours syscall.Stat_t
	if err := syscall.Fstat(int(fs.mntNS.Fd()), &theirs); err != nil {
		return err
	}
	if err := syscall.Stat("/proc/self/ns/mnt", &ours); err != nil {
		return err
	}
	if theirs.Ino == ours.Ino {
		return errors.New("the mount namespace is the host's")
	}
	return nil
}

// nsenterArgs are the arguments that put a run in the session's
// namespaces, as their root (bwrap then drops every capability and runs
// the code as UID). nsenter opens them through our descriptor table, so
// that no descriptor of ours reaches the sandbox. As root, nsenter switches
// to the namespaces' root once inside; otherwise our uid already is it.
func (fs *sessionFS) nsenterArgs(root bool) []string {
	self := "/proc/" + strconv.Itoa(os.Getpid()) + "/fd/"
	a := []string{
		"--user=" + self + strconv.Itoa(int(fs.userNS.Fd())),
		"--mount=" + self + strconv.Itoa(int(fs.mntNS.Fd())),
	}
	if root {
		return append(a, "--setuid", "0", "--setgid", "0")
	}
	return append(a, "--preserve-credentials")
}

// path is one of the tmpfs's directories, as the session's namespace
// sees it.
func (fs *sessionFS) path(dir string) string { return filepath.Join(fs.dir, dir) }

// close frees the tmpfs and the user's files with it, and removes the
// mount point. It is idempotent.
func (fs *sessionFS) close() {
	for _, f := range []**os.File{&fs.mntNS, &fs.userNS} {
		if *f != nil {
			(*f).Close()
			*f = nil
		}
	}
	if fs.dir != "" {
		// Nothing was ever written there; RemoveAll in case that changes.
		os.RemoveAll(fs.dir)
		fs.dir = ""
	}
	if fs.lock != nil {
		fs.lock.Close()
		fs.lock = nil
	}
}

// removeStaleSessionFS removes the mount points in base that no live
// session holds locked: those of a process that crashed or was killed
// (with the files older versions kept there on disk). Only real
// directories owned by one of owners are touched.
func removeStaleSessionFS(base string, owners []int) (removed int) {
	entries, err := os.ReadDir(base)
	if err != nil {
		return 0
	}
	for _, e := range entries {
		if !e.IsDir() || !strings.HasPrefix(e.Name(), fsPrefix) {
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
