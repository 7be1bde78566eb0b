// Package local is the embedded sandbox used when no E2B key is
// configured: each session is a directory, and each run a bubblewrap
// (bwrap) container with every namespace unshared (no network at all, not
// even loopback to the host), a read-only view of the interpreters, a fresh
// /tmp, no host environment and rlimits on memory, processes, CPU time and
// file size. If bubblewrap cannot run, Create fails with
// sandbox.ErrUnavailable: code is never run outside the sandbox.
package local

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/commonly/runtime/shared/sandbox"
)

// ProviderName is recorded on sandbox records.
const ProviderName = "local"

// WorkDir is where code runs inside the sandbox (as in E2B's template);
// it is the session's directory, kept across the session's runs.
const WorkDir = "/home/user"

// nobody is the identity runs take when we are root. A sandbox started by
// root is still owned by host uid 0, which the kernel exempts from
// RLIMIT_NPROC (a fork bomb would go unchecked), and which would make any
// escape an escape as root.
const nobody = 65534

// Config tunes the local sandbox. Zero values take the defaults.
type Config struct {
	// Bwrap and Prlimit default to the binaries on PATH.
	Bwrap   string
	Prlimit string
	// Python and Node default to /usr/bin (then /usr/local/bin, then PATH).
	// An interpreter outside /usr has its install prefix bound read-only.
	Python string
	Node   string
	// BaseDir holds session directories; default os.TempDir(). When root,
	// UID must be able to traverse it (o+x).
	BaseDir string
	// RunTimeout caps every run whatever the caller's deadline; default 30 s.
	RunTimeout time.Duration
	// Lifetime kills a session not killed by its owner; default
	// sandbox.Lifetime, as E2B's time-to-live.
	Lifetime time.Duration
	// MemoryBytes is RLIMIT_AS; default 1 GiB (node needs about 1 GiB of
	// address space to start).
	MemoryBytes int64
	// MaxProcs is RLIMIT_NPROC (threads included), counted within the
	// run's own user namespace; default 64.
	MaxProcs int
	// MaxFileBytes is RLIMIT_FSIZE; default 16 MiB.
	MaxFileBytes int64
	// TmpBytes sizes the /tmp tmpfs; default 64 MiB.
	TmpBytes int64
	// MaxOutputBytes caps stdout and stderr each; default
	// sandbox.MaxStreamBytes.
	MaxOutputBytes int
	// UID and GID runs take when the process is root; default 65534.
	UID, GID int
}

// Provider creates local sandboxes. It implements sandbox.Provider.
type Provider struct {
	cfg     Config
	setup   error // why the sandbox cannot run, found at New
	cred    *syscall.Credential
	python  interpreter
	node    interpreter
	rootFS  []string // bwrap arguments for the read-only system view
	path    string   // PATH inside the sandbox
	probeMu sync.Mutex
	probed  bool
}

var _ sandbox.Provider = (*Provider)(nil)

// interpreter is a resolved binary and the argv that reads a program
// from stdin.
type interpreter struct {
	argv []string
	err  error
}

// New resolves the tools. It does not fail: a missing tool makes Create
// return sandbox.ErrUnavailable, so that a machine without bubblewrap
// still serves turns (without code execution).
func New(cfg Config) *Provider {
	if cfg.RunTimeout <= 0 {
		cfg.RunTimeout = 30 * time.Second
	}
	if cfg.Lifetime <= 0 {
		cfg.Lifetime = sandbox.Lifetime
	}
	if cfg.MemoryBytes <= 0 {
		cfg.MemoryBytes = 1 << 30
	}
	if cfg.MaxProcs <= 0 {
		cfg.MaxProcs = 64
	}
	if cfg.MaxFileBytes <= 0 {
		cfg.MaxFileBytes = 16 << 20
	}
	if cfg.TmpBytes <= 0 {
		cfg.TmpBytes = 64 << 20
	}
	if cfg.MaxOutputBytes <= 0 {
		cfg.MaxOutputBytes = sandbox.MaxStreamBytes
	}
	if cfg.BaseDir == "" {
		cfg.BaseDir = os.TempDir()
	}
	if cfg.UID == 0 {
		cfg.UID = nobody
	}
	if cfg.GID == 0 {
		cfg.GID = nobody
	}
	p := &Provider{cfg: cfg}
	var err error
	if p.cfg.Bwrap, err = lookTool(cfg.Bwrap, "bwrap"); err != nil {
		p.setup = fmt.Errorf("bubblewrap (bwrap) is not installed (Debian package bubblewrap): %w", err)
	} else if p.cfg.Prlimit, err = lookTool(cfg.Prlimit, "prlimit"); err != nil {
		p.setup = fmt.Errorf("prlimit is not installed (Debian package util-linux): %w", err)
	}
	if os.Geteuid() == 0 {
		p.cred = &syscall.Credential{Uid: uint32(cfg.UID), Gid: uint32(cfg.GID), Groups: []uint32{}}
	}
	var extra []string
	var pyDir, nodeDir string
	p.python, pyDir = resolveInterpreter(cfg.Python, "python3", "-u", "-")
	p.node, nodeDir = resolveInterpreter(cfg.Node, "node", "-")
	for _, d := range []string{pyDir, nodeDir} {
		if d != "" {
			extra = append(extra, d)
		}
	}
	p.rootFS = rootFSArgs(extra)
	p.path = sandboxPath(p.python, p.node)
	return p
}

// Name implements sandbox.Provider.
func (p *Provider) Name() string { return ProviderName }

// Create implements sandbox.Provider: a fresh directory, after checking
// once that bubblewrap can build a sandbox on this machine.
func (p *Provider) Create(ctx context.Context, meta sandbox.Meta) (sandbox.Session, error) {
	if p.setup != nil {
		return nil, fmt.Errorf("local sandbox: %w: %w", sandbox.ErrUnavailable, p.setup)
	}
	dir, err := p.newDir()
	if err != nil {
		return nil, fmt.Errorf("local sandbox: %w: %w", sandbox.ErrUnavailable, err)
	}
	if err := p.probe(ctx, dir); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	s := &Session{p: p, id: "local-" + randomHex(8), dir: dir, runSlot: make(chan struct{}, 1)}
	s.mu.Lock()
	s.expiry = time.AfterFunc(p.cfg.Lifetime, func() { _ = s.Kill(context.Background()) })
	s.mu.Unlock()
	return s, nil
}

// newDir makes the session's directory, owned by the identity runs take.
func (p *Provider) newDir() (string, error) {
	dir, err := os.MkdirTemp(p.cfg.BaseDir, "commonly-sandbox-")
	if err != nil {
		return "", fmt.Errorf("create session directory: %w", err)
	}
	if p.cred != nil {
		if err := os.Chown(dir, int(p.cred.Uid), int(p.cred.Gid)); err != nil {
			os.RemoveAll(dir)
			return "", fmt.Errorf("hand session directory to uid %d: %w", p.cred.Uid, err)
		}
	}
	return dir, nil
}

// probe runs an empty sandbox once per provider, so that a machine where
// bwrap cannot create namespaces says so at Create, not as a code error.
func (p *Provider) probe(ctx context.Context, dir string) error {
	p.probeMu.Lock()
	defer p.probeMu.Unlock()
	if p.probed {
		return nil
	}
	truePath, err := exec.LookPath("true")
	if err != nil {
		truePath = "/usr/bin/true"
	}
	res, err := p.run(ctx, dir, []string{truePath}, "")
	if err != nil {
		return fmt.Errorf("local sandbox: %w: bubblewrap cannot run here: %w", sandbox.ErrUnavailable, err)
	}
	if res.exitCode != 0 {
		return fmt.Errorf("local sandbox: %w: bubblewrap cannot run here: exit %d: %s",
			sandbox.ErrUnavailable, res.exitCode, strings.TrimSpace(res.stderr.String()))
	}
	p.probed = true
	return nil
}

// lookTool finds a required binary, either the configured path or on PATH.
func lookTool(configured, name string) (string, error) {
	if configured != "" {
		name = configured
	}
	path, err := exec.LookPath(name)
	if err != nil {
		return "", err
	}
	return filepath.Abs(path)
}

// resolveInterpreter finds an interpreter and, when it lives outside /usr,
// the install prefix to bind. A PATH shim (pyenv) is a script needing its
// manager, so the system interpreters are preferred.
func resolveInterpreter(configured, name string, args ...string) (interpreter, string) {
	candidates := []string{"/usr/bin/" + name, "/usr/local/bin/" + name}
	if configured != "" {
		candidates = []string{configured}
	} else if p, err := exec.LookPath(name); err == nil && !strings.Contains(p, "/shims/") {
		candidates = append(candidates, p)
	}
	for _, c := range candidates {
		real, err := filepath.EvalSymlinks(c)
		if err != nil {
			continue
		}
		if st, err := os.Stat(real); err != nil || st.IsDir() || st.Mode()&0o111 == 0 {
			continue
		}
		real, _ = filepath.Abs(real)
		prefix := ""
		if !strings.HasPrefix(real, "/usr/") {
			// <prefix>/bin/<interpreter>: the prefix holds its libraries.
			prefix = filepath.Dir(filepath.Dir(real))
			if prefix == "/" {
				continue
			}
		}
		return interpreter{argv: append([]string{real}, args...)}, prefix
	}
	return interpreter{err: fmt.Errorf("%w: no %s interpreter installed", sandbox.ErrUnavailable, name)}, ""
}

func (p *Provider) interpreter(lang sandbox.Language) (interpreter, error) {
	switch lang {
	case sandbox.Python:
		return p.python, p.python.err
	case sandbox.JavaScript:
		return p.node, p.node.err
	}
	return interpreter{}, fmt.Errorf("local sandbox: unsupported language %q", lang)
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b) // crypto/rand never fails (it panics instead)
	return hex.EncodeToString(b)
}

// errKilled is the cause wrapped in sandbox.ErrLost for runs on a session
// that was killed (by its owner or its lifetime).
var errKilled = errors.New("session killed")
