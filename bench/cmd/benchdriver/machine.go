package main

import (
	"bufio"
	"os"
	"os/exec"
	"runtime"
	"strings"
)

// machine describes where the table came from.
type machine struct {
	cpus     int
	cpuModel string
	goVer    string
	nodeVer  string
	kernel   string
}

func machineInfo(node string) machine {
	m := machine{cpus: runtime.NumCPU(), goVer: runtime.Version()}
	if f, err := os.Open("/proc/cpuinfo"); err == nil {
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if k, v, ok := strings.Cut(sc.Text(), ":"); ok && strings.TrimSpace(k) == "model name" {
				m.cpuModel = strings.TrimSpace(v)
				break
			}
		}
		f.Close()
	}
	if out, err := exec.Command(node, "--version").Output(); err == nil {
		m.nodeVer = strings.TrimSpace(string(out))
	}
	if out, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		m.kernel = strings.TrimSpace(string(out))
	}
	return m
}
