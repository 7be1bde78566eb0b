// Package load is the load-and-fault run behind `make load` (bench/load):
// it starts the local stack's production wiring (the turn function's
// handler behind the local API Gateway with real JWTs, the turn service
// and worker, the alarm function on the runs stream through the embedded
// DynamoDB's event source mapping, the reaper on a ticker, the fake E2B
// and the scripted LiteLLM), drives many users' turns through the API with
// faults injected, then reads back everything that was written and checks
// the invariants (invariants.go), one line each.
//
// The stack runs on a clock Speed times faster than the wall (clock.go),
// so that the five minutes after which the reaper closes an abandoned run
// and the three-minute sandbox lifetime pass within the run; every
// timestamp the stack writes and every rule that reads them use it.
package load
