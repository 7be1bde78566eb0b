package local

import (
	"debug/elf"
	"errors"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// hostView is the read-only part of a run's file system: the interpreters
// and prlimit, the shared libraries they load (found as the dynamic linker
// would), Python's standard library and site trees, the time zone and
// C.UTF-8 locale data. Nothing of /etc, no shell, no other program: no
// file of the host's configuration is readable inside.
type hostView struct {
	// args are bwrap's arguments that build it.
	args []string
	// libDirs is LD_LIBRARY_PATH inside: the directories the libraries
	// were bound into, in the order they were found. The host's
	// /etc/ld.so.cache is not there to point at them.
	libDirs []string
}

// systemDirs are the host's top-level program directories. On merged-/usr
// systems they are symlinks into /usr and are recreated as such; a real
// directory is not bound, only the files we need in it.
var systemDirs = []string{"/bin", "/sbin", "/lib", "/lib64", "/lib32", "/libx32"}

// dataDirs are read by the interpreters' standard libraries and hold no
// configuration: the time zone database (Python's zoneinfo) and the
// C.UTF-8 locale of glibc releases that do not build it in. Debian's
// nodejs loads some of its built-in modules from /usr/share/nodejs.
var dataDirs = []string{"/usr/share/zoneinfo", "/usr/lib/locale/C.utf8", "/usr/lib/locale/C.UTF-8", "/usr/share/nodejs"}

// dlopened are libraries loaded by name at run time rather than listed as
// needed: glibc opens libgcc_s for thread cancellation and unwinding.
var dlopened = []string{"libgcc_s.so.1"}

// buildHostView resolves what the programs need on this machine. Each
// program is an absolute, symlink-free path; commands maps a name to put
// on PATH ("python3") to the program it runs.
func buildHostView(programs []string, commands map[string]string, trees []string) hostView {
	v := &viewBuilder{seen: map[string]bool{}, ldDirs: ldConfigDirs("/etc/ld.so.conf")}
	for _, d := range systemDirs {
		if st, err := os.Lstat(d); err == nil && st.Mode()&os.ModeSymlink != 0 {
			if target, err := os.Readlink(d); err == nil {
				v.args = append(v.args, "--symlink", target, d)
			}
		}
	}
	for _, p := range programs {
		v.bind(p)
		v.object(p)
	}
	for _, name := range slices.Sorted(maps.Keys(commands)) {
		target := commands[name]
		if link := filepath.Join(filepath.Dir(target), name); link != target {
			v.args = append(v.args, "--symlink", filepath.Base(target), link)
		}
	}
	for _, t := range trees {
		if !isDir(t) {
			continue
		}
		v.bind(t)
		// Extension modules load libraries of their own.
		_ = filepath.WalkDir(t, func(p string, d fs.DirEntry, err error) error {
			if err == nil && d.Type().IsRegular() && isSharedObjectName(d.Name()) {
				v.object(p)
			}
			return nil
		})
	}
	for _, d := range dataDirs {
		if isDir(d) {
			v.bind(d)
		}
	}
	if v.class != 0 {
		for _, name := range dlopened {
			v.library(name, nil)
		}
	}
	return hostView{args: v.args, libDirs: v.libDirs}
}

type viewBuilder struct {
	args    []string
	seen    map[string]bool // destinations bound, objects walked
	ldDirs  []string
	libDirs []string
	// class and machine of the first program: libraries of another ABI
	// (a 32-bit copy in /usr/lib) are skipped, as the dynamic linker does.
	class   elf.Class
	machine elf.Machine
}

// bind makes src visible, read-only, where the dynamic linker or the
// interpreter will look for it: at its path with the directories'
// symlinks resolved, because the top-level symlinks are recreated.
func (v *viewBuilder) bind(src string) string {
	dest := canonical(src)
	if !v.seen["bind:"+dest] {
		v.seen["bind:"+dest] = true
		v.args = append(v.args, "--ro-bind", src, dest)
	}
	return dest
}

// object binds what an ELF file needs: its program interpreter (ld.so)
// and, transitively, its needed libraries.
func (v *viewBuilder) object(path string) {
	if v.seen["obj:"+path] {
		return
	}
	v.seen["obj:"+path] = true
	f, err := elf.Open(path)
	if err != nil {
		return
	}
	defer f.Close()
	if v.class == 0 {
		v.class, v.machine = f.Class, f.Machine
	} else if f.Class != v.class || f.Machine != v.machine {
		return
	}
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			if b, err := readInterp(p); err == nil {
				v.bind(b)
			}
		}
	}
	needed, _ := f.DynString(elf.DT_NEEDED)
	runpath, _ := f.DynString(elf.DT_RUNPATH)
	rpath, _ := f.DynString(elf.DT_RPATH)
	if len(runpath) > 0 {
		rpath = nil // DT_RPATH is ignored when DT_RUNPATH is present
	}
	origin := filepath.Dir(canonical(path))
	var own []string
	for _, list := range append(rpath, runpath...) {
		for _, d := range strings.Split(list, ":") {
			d = strings.ReplaceAll(strings.ReplaceAll(d, "${ORIGIN}", origin), "$ORIGIN", origin)
			if filepath.IsAbs(d) {
				own = append(own, d)
			}
		}
	}
	for _, name := range needed {
		v.library(name, own)
	}
}

// library finds a needed library as the dynamic linker would (the
// object's own search path, then ld.so.conf's directories, then the
// defaults) and binds it under its needed name.
func (v *viewBuilder) library(name string, own []string) {
	if strings.Contains(name, "/") {
		v.bind(name)
		v.object(name)
		return
	}
	for i, dir := range slices.Concat(own, v.ldDirs, []string{"/lib64", "/usr/lib64", "/lib", "/usr/lib"}) {
		p := filepath.Join(dir, name)
		if !v.sameABI(p) {
			continue
		}
		dest := v.bind(p)
		if i >= len(own) {
			if d := filepath.Dir(dest); !slices.Contains(v.libDirs, d) {
				v.libDirs = append(v.libDirs, d)
			}
		}
		v.object(p)
		return
	}
}

func (v *viewBuilder) sameABI(path string) bool {
	f, err := elf.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	return f.Class == v.class && f.Machine == v.machine
}

func readInterp(p *elf.Prog) (string, error) {
	b := make([]byte, p.Filesz)
	if _, err := p.ReadAt(b, 0); err != nil {
		return "", err
	}
	s := strings.TrimRight(string(b), "\x00")
	if !filepath.IsAbs(s) {
		return "", errors.New("relative program interpreter")
	}
	return s, nil
}

// canonical is path with the symlinks of its directories resolved (the
// file itself may stay a link's name: a library is looked up by it).
func canonical(path string) string {
	dir, err := filepath.EvalSymlinks(filepath.Dir(path))
	if err != nil {
		return filepath.Clean(path)
	}
	return filepath.Join(dir, filepath.Base(path))
}

// isSharedObjectName reports whether name is lib.so or lib.so.1.2.3.
func isSharedObjectName(name string) bool {
	i := strings.LastIndex(name, ".so")
	if i <= 0 {
		return false
	}
	for _, part := range strings.Split(name[i+len(".so"):], ".")[1:] {
		if part == "" || strings.Trim(part, "0123456789") != "" {
			return false
		}
	}
	return i+len(".so") == len(name) || name[i+len(".so")] == '.'
}

// ldConfigDirs reads the dynamic linker's configured directories
// (ld.so.conf and what it includes), in order.
func ldConfigDirs(conf string) []string {
	var dirs []string
	var read func(string, int)
	read = func(file string, depth int) {
		b, err := os.ReadFile(file)
		if err != nil || depth > 8 {
			return
		}
		for _, line := range strings.Split(string(b), "\n") {
			line, _, _ = strings.Cut(line, "#")
			fields := strings.Fields(line)
			switch {
			case len(fields) == 0:
			case fields[0] == "include":
				for _, pat := range fields[1:] {
					if !filepath.IsAbs(pat) {
						pat = filepath.Join(filepath.Dir(file), pat)
					}
					matches, _ := filepath.Glob(pat)
					slices.Sort(matches)
					for _, m := range matches {
						read(m, depth+1)
					}
				}
			case filepath.IsAbs(fields[0]):
				dirs = append(dirs, fields[0])
			}
		}
	}
	read(conf, 0)
	return dirs
}

func isDir(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.IsDir()
}

// pythonTrees are the directories a Python interpreter at
// <prefix>/bin/pythonX.Y imports from: its standard library and the site
// directories Debian's site.py adds.
func pythonTrees(bin string) []string {
	prefix := filepath.Dir(filepath.Dir(bin))
	versions := []string{}
	if ver, ok := strings.CutPrefix(filepath.Base(bin), "python"); ok && isVersion(ver) {
		versions = append(versions, ver)
	} else {
		// An unversioned binary: every installed version's tree.
		matches, _ := filepath.Glob(filepath.Join(prefix, "lib", "python3.*", "os.py"))
		for _, m := range matches {
			versions = append(versions, strings.TrimPrefix(filepath.Base(filepath.Dir(m)), "python"))
		}
	}
	var trees []string
	for _, ver := range versions {
		trees = append(trees,
			filepath.Join(prefix, "lib", "python"+ver),
			filepath.Join(prefix, "local", "lib", "python"+ver, "dist-packages"))
	}
	return append(trees, filepath.Join(prefix, "lib", "python3", "dist-packages"))
}

// isVersion reports whether s is "3.11": two dot-separated numbers.
func isVersion(s string) bool {
	major, minor, ok := strings.Cut(s, ".")
	return ok && major != "" && minor != "" && strings.Trim(major+minor, "0123456789") == ""
}
