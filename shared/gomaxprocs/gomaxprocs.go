// Package gomaxprocs sizes the Go scheduler of a Lambda function.
//
// An execution environment serves one invocation at a time, and a turn is
// one sequential flow of I/O: the API request, model calls, DynamoDB
// calls, sandbox runs. With more than one P, each hand-off between the
// goroutines of an HTTP round trip (the caller, the transport's write and
// read loops, the netpoller) can wake another OS thread; with one P they
// run on one thread. `make bench` against GOMAXPROCS=2 measured 13–21 %
// less CPU per turn (a third less kernel time) and no more wall time
// (docs/benchmarks.md, "One P").
// Below 1,769 MB a function has less than one vCPU anyway; Go's own
// default counts the vCPUs and the cgroup limit but never goes below 2.
package gomaxprocs

import "runtime"

// Env is the variable that overrides the choice: the Go runtime applies
// it before main runs, and Sequential leaves it alone.
const Env = "GOMAXPROCS"

// Sequential sets GOMAXPROCS to 1 unless the environment sets it, and
// returns the value in effect.
func Sequential(getenv func(string) string) int {
	if getenv(Env) != "" {
		return runtime.GOMAXPROCS(0)
	}
	runtime.GOMAXPROCS(1)
	return 1
}
