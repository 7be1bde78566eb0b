// Package local is the embedded sandbox used when no E2B key is
// configured (SANDBOX=local, `make run`). Each session is one
// size-limited tmpfs (its /home/user, /tmp and /dev/shm), held in a mount
// namespace of its own, and each run a bubblewrap (bwrap) container
// entered from there, with every namespace unshared (no network at all,
// not even loopback to the host), a read-only view of only the
// interpreters and what they load, no host environment, a seccomp filter
// and rlimits on memory, processes, CPU time and file size. If bubblewrap
// cannot run, Create fails with sandbox.ErrUnavailable: code is never run
// outside the sandbox.
package local

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/commonly/runtime/shared/sandbox"
)

// ProviderName is recorded on sandbox records.
const ProviderName = "local"

// WorkDir is where code runs inside the sandbox (as in E2B's template);
// it is the session's home, kept across the session's runs.
const WorkDir = "/home/user"

// DefaultWritableBytes and DefaultMaxFiles bound all one sandbox may
// write: its /home/user, /tmp and /dev/shm share one tmpfs of this size
// and inode count, kept across the session's runs (as an E2B sandbox's
// disk is). Everything else is read-only.
const (
	DefaultWritableBytes = 128 << 20
	DefaultMaxFiles      = 64 << 10
)

// nobody is the identity sandboxes take when we are root, and the uid
// code runs as inside. A sandbox started by root is still owned by host
// uid 0, which the kernel exempts from RLIMIT_NPROC (a fork bomb would go
// unchecked), and which would make any escape an escape as root.
const nobody = 65534

// Config tunes the local sandbox. Zero values take the defaults.
type Config struct {
	// Bwrap, Prlimit and Nsenter default to the binaries on PATH (as do
	// unshare, mount, mkdir and sh, which set up a session's tmpfs).
	Bwrap   string
	Prlimit string
	Nsenter string
	// Python and Node default to /usr/bin (then /usr/local/bin, then PATH).
	Python string
	Node   string
	// BaseDir holds the sessions' mount points (empty directories: the
	// files live in memory); default os.TempDir(). When root, UID must be
	// able to traverse it (o+x). Mount points left by a process that died
	// are removed when a provider starts.
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
	// WritableBytes and MaxFiles size the session's tmpfs; defaults
	// DefaultWritableBytes and DefaultMaxFiles.
	WritableBytes int64
	MaxFiles      int
	// MaxSessions caps the sandboxes alive at once in this process (one
	// provider per process); default 4.
	MaxSessions int
	// QueueWait is how long Create waits for a session to end when
	// MaxSessions are alive (and ctx allows), before it gives up with
	// sandbox.ErrUnavailable; default 2 s.
	QueueWait time.Duration
	// MaxOutputBytes caps stdout and stderr each; default
	// sandbox.MaxStreamBytes.
	MaxOutputBytes int
	// UID and GID sandboxes take on the host when the process is root,
	// and code takes inside; default 65534.
	UID, GID int
	// Now stamps each session's start (Live); default time.Now.
	Now func() time.Time
}

// Provider creates local sandboxes. It implements sandbox.Provider.
type Provider struct {
	cfg     Config
	tools   tools
	setup   error // why the sandbox cannot run, found at New
	cred    *syscall.Credential
	python  interpreter
	node    interpreter
	path    string // PATH inside the sandbox
	seccomp []byte // the compiled filter bwrap installs
	slots   chan struct{}

	viewOnce sync.Once
	view     hostView

	probeMu sync.Mutex
	probed  bool

	// live are the sessions not killed yet, for the reaper (live.go).
	liveMu sync.Mutex
	live   map[string]*Session

	// afterFunc arms the lifetime timer; tests fire it themselves.
	afterFunc func(time.Duration, func()) stopper
	// started, when set, is told that a run's process has started.
	started func()
}

// stopper is the part of *time.Timer a session uses.
type stopper interface{ Stop() bool }

var _ sandbox.Provider = (*Provider)(nil)

// New resolves the tools and removes the mount points that sessions of a
// process that died left in BaseDir. It does not fail: a missing tool
// makes Create return sandbox.ErrUnavailable, so that a machine without
// bubblewrap still serves turns (without code execution).
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
	if cfg.WritableBytes <= 0 {
		cfg.WritableBytes = DefaultWritableBytes
	}
	if cfg.MaxFiles <= 0 {
		cfg.MaxFiles = DefaultMaxFiles
	}
	if cfg.MaxSessions <= 0 {
		cfg.MaxSessions = 4
	}
	if cfg.QueueWait <= 0 {
		cfg.QueueWait = 2 * time.Second
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
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	p := &Provider{
		cfg:       cfg,
		live:      map[string]*Session{},
		slots:     make(chan struct{}, cfg.MaxSessions),
		afterFunc: func(d time.Duration, f func()) stopper { return time.AfterFunc(d, f) },
	}
	p.tools, p.setup = resolveTools(cfg)
	if p.setup == nil {
		p.seccomp, p.setup = hostSeccompFilter()
	}
	if os.Geteuid() == 0 {
		p.cred = &syscall.Credential{Uid: uint32(cfg.UID), Gid: uint32(cfg.GID), Groups: []uint32{}}
	}
	p.python = resolveInterpreter(cfg.Python, "python3", "-u", "-")
	p.node = resolveInterpreter(cfg.Node, "node", "-")
	p.path = sandboxPath(p.python, p.node)
	removeStaleSessionFS(cfg.BaseDir, p.owners())
	return p
}

// Name implements sandbox.Provider.
func (p *Provider) Name() string { return ProviderName }

// Create implements sandbox.Provider: a slot among MaxSessions, a fresh
// tmpfs, after checking once that bubblewrap can build a sandbox on this
// machine.
func (p *Provider) Create(ctx context.Context, meta sandbox.Meta) (sandbox.Session, error) {
	if p.setup != nil {
		return nil, fmt.Errorf("local sandbox: %w: %w", sandbox.ErrUnavailable, p.setup)
	}
	release, err := p.acquire(ctx)
	if err != nil {
		return nil, err
	}
	fs, err := p.newSessionFS(ctx)
	if err != nil {
		release()
		return nil, fmt.Errorf("local sandbox: %w: %w", sandbox.ErrUnavailable, err)
	}
	if err := p.probe(ctx, fs); err != nil {
		fs.close()
		release()
		return nil, err
	}
	s := &Session{p: p, id: "local-" + randomHex(8), runID: meta.RunID, fs: fs, release: release, runSlot: make(chan struct{}, 1), started: p.cfg.Now()}
	s.mu.Lock()
	s.expiry = p.afterFunc(p.cfg.Lifetime, func() { _ = s.Kill(context.Background()) })
	s.mu.Unlock()
	p.track(s)
	return s, nil
}

// acquire takes one of MaxSessions slots, waiting at most QueueWait (and
// as long as ctx allows) for a session to end. The returned release gives
// the slot back; calling it more than once is harmless.
func (p *Provider) acquire(ctx context.Context) (release func(), err error) {
	release = sync.OnceFunc(func() { <-p.slots })
	select {
	case p.slots <- struct{}{}:
		return release, nil
	default:
	}
	wait := time.NewTimer(p.cfg.QueueWait)
	defer wait.Stop()
	select {
	case p.slots <- struct{}{}:
		return release, nil
	case <-wait.C:
		return nil, fmt.Errorf("local sandbox: %w: %d sandboxes already running", sandbox.ErrUnavailable, p.cfg.MaxSessions)
	case <-ctx.Done():
		return nil, fmt.Errorf("local sandbox: waiting for a free slot: %w", ctx.Err())
	}
}

// probe runs an empty sandbox once per provider, so that a machine where
// bwrap cannot create namespaces says so at Create, not as a code error.
func (p *Provider) probe(ctx context.Context, fs *sessionFS) error {
	p.probeMu.Lock()
	defer p.probeMu.Unlock()
	if p.probed {
		return nil
	}
	res, err := p.run(ctx, fs, []string{p.tools.prlimit, "--version"}, "")
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

// hostView is computed on first use: it walks the interpreters' trees,
// which a provider that never runs code should not pay for.
func (p *Provider) hostView() hostView {
	p.viewOnce.Do(func() {
		programs := []string{p.tools.prlimit}
		commands := map[string]string{}
		var trees []string
		if p.python.err == nil {
			bin := p.python.argv[0]
			programs = append(programs, bin)
			commands["python3"], commands["python"] = bin, bin
			trees = pythonTrees(bin)
		}
		if p.node.err == nil {
			programs = append(programs, p.node.argv[0])
			commands["node"] = p.node.argv[0]
		}
		p.view = buildHostView(programs, commands, trees)
	})
	return p.view
}

// owners are the uids whose leftover mount points New may remove: the
// identity runs take, and ours.
func (p *Provider) owners() []int {
	if p.cred != nil {
		return []int{int(p.cred.Uid), os.Geteuid()}
	}
	return []int{os.Geteuid()}
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b) // crypto/rand never fails (it panics instead)
	return hex.EncodeToString(b)
}

// errKilled is the cause wrapped in sandbox.ErrLost for runs on a session
// that was killed (by its owner or its lifetime).
var errKilled = errors.New("session killed")
