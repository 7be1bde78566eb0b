package local

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/commonly/runtime/shared/sandbox"
)

// tools are the host's programs a sandbox is made with, resolved at New.
type tools struct {
	bwrap, prlimit, nsenter, unshare, mount, mkdir, sh string
}

// interpreter is a resolved binary and the argv that reads a program
// from stdin.
type interpreter struct {
	argv []string
	err  error
}

// resolveTools finds the programs a sandbox is made with, or says which
// is missing and which Debian package has it.
func resolveTools(cfg Config) (tools, error) {
	var t tools
	for _, tool := range []struct {
		dest       *string
		configured string
		name, pkg  string
	}{
		{&t.bwrap, cfg.Bwrap, "bwrap", "bubblewrap"},
		{&t.prlimit, cfg.Prlimit, "prlimit", "util-linux"},
		{&t.nsenter, cfg.Nsenter, "nsenter", "util-linux"},
		{&t.unshare, "", "unshare", "util-linux"},
		{&t.mount, "", "mount", "mount"},
		{&t.mkdir, "", "mkdir", "coreutils"},
		{&t.sh, "", "sh", "dash"},
	} {
		path, err := lookTool(tool.configured, tool.name)
		if err != nil {
			return t, fmt.Errorf("%s is not installed (Debian package %s): %w", tool.name, tool.pkg, err)
		}
		*tool.dest = path
	}
	return t, nil
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

// resolveInterpreter finds an interpreter, symlinks resolved: that path
// and the libraries it loads are what the sandbox shows. A PATH shim
// (pyenv) is a script needing its manager, so the system interpreters are
// preferred.
func resolveInterpreter(configured, name string, args ...string) interpreter {
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
		if filepath.Dir(filepath.Dir(real)) == "/" {
			continue // /bin/python: no install prefix to find its library in
		}
		return interpreter{argv: append([]string{real}, args...)}
	}
	return interpreter{err: fmt.Errorf("%w: no %s interpreter installed", sandbox.ErrUnavailable, name)}
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
