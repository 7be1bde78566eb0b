package main

import (
	"os"
	"runtime"
	"runtime/pprof"
)

// startProfiles profiles the run (CPU; where goroutines wait on locks and
// channels), for finding what bounds its turns a second.
func startProfiles(prefix string) (stop func(), err error) {
	cpu, err := os.Create(prefix + ".cpu")
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(cpu); err != nil {
		cpu.Close()
		return nil, err
	}
	runtime.SetMutexProfileFraction(5)
	runtime.SetBlockProfileRate(int(1e6)) // one sample a millisecond blocked
	return func() {
		pprof.StopCPUProfile()
		cpu.Close()
		for _, name := range []string{"mutex", "block"} {
			if f, err := os.Create(prefix + "." + name); err == nil {
				_ = pprof.Lookup(name).WriteTo(f, 0)
				f.Close()
			}
		}
	}, nil
}
