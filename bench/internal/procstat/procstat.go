// Package procstat reads a process's CPU time and peak resident memory.
package procstat

import (
	"bufio"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Usage is a process's CPU time and memory.
type Usage struct {
	// CPU is user + system time of all threads (getrusage).
	CPU time.Duration `json:"cpuNs"`
	// Sys is the system (kernel) part of CPU: on loopback most of it is
	// the TCP stack working for the process's sockets.
	Sys time.Duration `json:"sysNs"`
	// PeakRSSKB is VmHWM, the peak resident set, in KiB.
	PeakRSSKB int64 `json:"peakRssKB"`
}

// Self reads this process's usage.
func Self() Usage {
	u := Usage{}
	u.CPU, u.Sys = CPU()
	u.PeakRSSKB = peakRSS("/proc/self/status")
	return u
}

// CPU is this process's CPU time, user + system of all threads, and its
// system part (getrusage); zero if getrusage fails. It reads no file.
func CPU() (total, sys time.Duration) {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0, 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), time.Duration(ru.Stime.Nano())
}

// peakRSS reads VmHWM (KiB) from a /proc/<pid>/status file.
func peakRSS(path string) int64 {
	f, err := os.Open(path)
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if ok && k == "VmHWM" {
			n, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return n
		}
	}
	return 0
}
