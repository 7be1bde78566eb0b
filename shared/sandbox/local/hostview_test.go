package local

import (
	"encoding/json"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/commonly/runtime/shared/sandbox"
)

// TestNoHostConfiguration looks for the host's files from inside: the
// places configuration and credentials live are not there, and every file
// that is visible belongs to an interpreter (its trees, or an ELF binary
// or library it loads).
func TestNoHostConfiguration(t *testing.T) {
	s := newSession(t, Config{})
	home, _ := os.UserHomeDir()
	cwd, _ := os.Getwd()
	probes := []string{
		"/usr/local/etc", "/usr/local/etc/npmrc", "/usr/etc", "/etc", "/etc/passwd", "/etc/shadow",
		"/etc/hosts", "/etc/resolv.conf", "/etc/ssl", "/etc/ld.so.cache", "/root", "/home/ubuntu",
		"/var", "/opt", "/srv", "/run", "/mnt", "/work", "/usr/share/doc", "/usr/include",
		"/usr/bin/bash", "/bin/sh", "/usr/bin/sudo", "/usr/bin/env", "/usr/lib/node_modules",
		home, cwd,
	}
	b, _ := json.Marshal(probes)
	code := `
import json, os
probes = ` + string(b) + ` # a JSON list of strings is a Python list
found = [p for p in probes if os.path.lexists(p)]
files = []
for root, dirs, names in os.walk("/"):
    if root in ("/proc", "/dev", "/home/user", "/tmp"):
        dirs[:] = []
        continue
    for n in names:
        p = os.path.join(root, n)
        if os.path.islink(p):
            continue
        with open(p, "rb") as f:
            files.append([p, f.read(4) == b"\x7fELF"])
print(json.dumps({"found": found, "files": files}))
`
	got := run(t, s, sandbox.Python, code)
	var out struct {
		Found []string
		Files [][2]any
	}
	if err := json.Unmarshal([]byte(got.Stdout), &out); err != nil {
		t.Fatalf("output %q (stderr %q): %v", got.Stdout, got.Stderr, err)
	}
	if len(out.Found) > 0 {
		t.Errorf("visible inside: %v", out.Found)
	}
	// Trees whose non-ELF files an interpreter reads: Python's library
	// and site directories, the time zone and locale data.
	trees := dataDirs
	if in, err := s.p.interpreter(sandbox.Python); err == nil {
		trees = append(pythonTrees(in.argv[0]), trees...)
	}
	for _, f := range out.Files {
		path, elf := f[0].(string), f[1].(bool)
		if !elf && !slices.ContainsFunc(trees, func(t string) bool { return strings.HasPrefix(path, t+"/") }) {
			t.Errorf("visible inside, neither an interpreter's tree nor a program or library: %s", path)
		}
	}
	if len(out.Files) < 100 {
		t.Errorf("walked %d files: the walk did not see the interpreters", len(out.Files))
	}
}

// TestStandardLibraryLoads imports every extension module of Python's
// standard library and site directories, and requires every Node built-in,
// inside and on the host: the sandbox must fail none that the host loads
// (each needs its libraries bound).
func TestStandardLibraryLoads(t *testing.T) {
	s := newSession(t, Config{})
	const py = `
import importlib, json, os, sys, sysconfig
names = set()
for d in [sysconfig.get_path("platstdlib") + "/lib-dynload"] + [p for p in sys.path if "-packages" in p]:
    if not os.path.isdir(d):
        continue
    for f in os.listdir(d):
        if f.endswith(".so"):
            names.add(f.split(".")[0])
failed = []
for n in sorted(names):
    try:
        importlib.import_module(n)
    except BaseException as e:
        failed.append(n)
print(json.dumps({"tried": len(names), "failed": failed}))
`
	const js = `
const failed = [];
const names = require('module').builtinModules.filter(n => !n.startsWith('_'));
for (const n of names) { try { require(n) } catch (e) { failed.push(n) } }
console.log(JSON.stringify({tried: names.length, failed}));
`
	for _, c := range []struct {
		lang sandbox.Language
		code string
	}{{sandbox.Python, py}, {sandbox.JavaScript, js}} {
		in, err := s.p.interpreter(c.lang)
		if err != nil {
			t.Fatal(err)
		}
		host := exec.Command(in.argv[0], in.argv[1:]...)
		host.Stdin = strings.NewReader(c.code)
		hostOut, err := host.Output()
		if err != nil {
			t.Fatalf("%s on the host: %v", c.lang, err)
		}
		var want, got struct {
			Tried  int
			Failed []string
		}
		if err := json.Unmarshal(hostOut, &want); err != nil {
			t.Fatalf("host output %q: %v", hostOut, err)
		}
		out := run(t, s, c.lang, c.code)
		if err := json.Unmarshal([]byte(out.Stdout), &got); err != nil {
			t.Fatalf("output %q (stderr %q): %v", out.Stdout, out.Stderr, err)
		}
		for _, n := range got.Failed {
			if !slices.Contains(want.Failed, n) {
				t.Errorf("%s: %s loads on the host, not in the sandbox", c.lang, n)
			}
		}
		if got.Tried == 0 || got.Tried != want.Tried {
			t.Errorf("%s: tried %d modules inside, %d on the host", c.lang, got.Tried, want.Tried)
		}
	}
}

func TestIsSharedObjectName(t *testing.T) {
	for name, want := range map[string]bool{
		"libc.so.6": true, "libfoo.so": true, "_ssl.cpython-311-x86_64-linux-gnu.so": true, "libdb-5.3.so": true,
		"libicu.so.72.1": true, "foo.sock": false, "foo.so.x": false, "so": false, ".so": false, "foo.py": false,
	} {
		if got := isSharedObjectName(name); got != want {
			t.Errorf("isSharedObjectName(%q) = %v, want %v", name, got, want)
		}
	}
}

func TestLdConfigDirs(t *testing.T) {
	dir := t.TempDir()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.MkdirAll(dir+"/conf.d", 0o755))
	must(os.WriteFile(dir+"/ld.so.conf", []byte("# comment\n/first\ninclude conf.d/*.conf\n/last # trailing\n"), 0o644))
	must(os.WriteFile(dir+"/conf.d/b.conf", []byte("/b\n"), 0o644))
	must(os.WriteFile(dir+"/conf.d/a.conf", []byte("/a1\n\n/a2\nrelative/ignored\n"), 0o644))
	got := ldConfigDirs(dir + "/ld.so.conf")
	want := []string{"/first", "/a1", "/a2", "/b", "/last"}
	if !slices.Equal(got, want) {
		t.Errorf("ldConfigDirs = %v, want %v", got, want)
	}
}
